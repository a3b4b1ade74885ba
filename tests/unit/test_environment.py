from __future__ import annotations

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
    _site_info.cache_clear()
    assert fingerprint(python) != before
    assert fingerprint(None) == fingerprint(sys.executable)
