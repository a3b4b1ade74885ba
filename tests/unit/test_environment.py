from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from guard_adapters.pytest.environment import _site_info, fingerprint


def test_a_virtualenv_is_fingerprinted_by_its_own_packages(tmp_path: Path) -> None:
    venv = tmp_path / "v"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    _, paths = _site_info(python)
    assert all(str(venv) in p for p in paths)  # not this interpreter's site-packages
    before = fingerprint(python)
    (Path(paths[0]) / "somepkg-1.0.dist-info").mkdir(parents=True)
    assert fingerprint(python) != before
    assert fingerprint(None) == fingerprint(sys.executable)


def test_a_recreated_interpreter_is_probed_again_in_the_same_process(tmp_path: Path) -> None:
    """A long-lived process (the warm worker) sees a virtualenv rebuilt at the same path."""
    python = tmp_path / "python"
    site = [str(tmp_path / "site-a"), str(tmp_path / "site-b")]
    for folder, dist in zip(site, ("one-1.0.dist-info", "two-2.0.dist-info"), strict=True):
        (Path(folder) / dist).mkdir(parents=True)

    def interpreter(version: str, paths: list[str], mtime: int) -> None:
        payload = json.dumps({"version": version, "paths": paths})
        python.write_text(f"#!/bin/sh\necho '{payload}'\n")
        python.chmod(0o755)
        os.utime(python, ns=(mtime, mtime))

    interpreter("3.12.0", site[:1], 10**18)
    first = fingerprint(str(python))
    assert _site_info(str(python)) == ("3.12.0", site[:1])
    interpreter("3.13.0", site[1:], 2 * 10**18)
    assert _site_info(str(python)) == ("3.13.0", site[1:])
    assert fingerprint(str(python)) != first
