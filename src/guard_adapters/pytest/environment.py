"""A fingerprint of the interpreter and installed distributions that run the target's tests."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from guard_adapters.files import ensure_state_dir
from guard_core.config import Settings

_PROBE = (
    "import json, site, sys, sysconfig\n"
    "paths = {sysconfig.get_path('purelib'), sysconfig.get_path('platlib')}\n"
    "paths.update(getattr(site, 'getsitepackages', lambda: [])())\n"
    "print(json.dumps({'version': sys.version, 'paths': sorted(p for p in paths if p)}))\n"
)


def _interpreter_key(python: str | None) -> str:
    """The interpreter's path and modification time: a recreated virtualenv is another one."""
    path = os.path.abspath(python or sys.executable)
    try:
        return f"{path}:{os.lstat(path).st_mtime_ns}"
    except OSError:
        return f"{path}:-"


def _site_info(python: str | None) -> tuple[str, list[str]]:
    """Version and site-packages folders of an interpreter (asked once per process and
    version of the interpreter)."""
    return _site_info_of(python, _interpreter_key(python))


@functools.lru_cache(maxsize=16)
def _site_info_of(python: str | None, key: str) -> tuple[str, list[str]]:
    # compare the paths themselves: every virtualenv's python links to the same binary
    if not python or os.path.abspath(python) == os.path.abspath(sys.executable):
        import site
        import sysconfig

        paths = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
        paths.update(site.getsitepackages())
        return sys.version, sorted(p for p in paths if p)
    out = subprocess.run(
        [python, "-c", _PROBE], capture_output=True, text=True, check=True, timeout=30
    )
    data = json.loads(out.stdout)
    return data["version"], data["paths"]


def fingerprint(python: str | None) -> str:
    """Python version plus the names (with versions) of every installed distribution.

    Listing the dist-info folders is enough: their names carry the version, and it costs a
    directory read instead of importing package metadata.
    """
    version, paths = _KNOWN.get(_interpreter_key(python)) or _site_info(python)
    entries = []
    for path in paths:
        try:
            names = os.listdir(path)
        except OSError:
            continue
        entries += sorted(
            n
            for n in names
            if n.endswith((".dist-info", ".egg-info", ".egg-link", ".pth"))
            and not n.lower().startswith(("guard_graph", "__editable___guard_graph"))
        )
    digest = hashlib.sha256("\n".join([version, *entries]).encode()).hexdigest()
    return digest[:24]


def _remembered_site_info(python: str, cache: Path) -> None:
    """Seed :func:`_site_info` from ``cache`` (one file per state dir) so a CLI process does
    not start the target interpreter on every check; the entry is keyed by the interpreter's
    path and modification time."""
    key = _interpreter_key(python)
    try:
        data = json.loads(cache.read_text()) if cache.exists() else {}
    except (OSError, ValueError):
        return
    if key in data:
        version, paths = data[key]
        _KNOWN[key] = (version, paths)
        return
    try:
        data = {key: list(_site_info(python))}
        ensure_state_dir(cache.parent)
        cache.write_text(json.dumps(data))
    except (OSError, subprocess.SubprocessError, ValueError, KeyError):
        return


_KNOWN: dict[str, tuple[str, list[str]]] = {}  # by _interpreter_key


def environment_probe(settings: Settings) -> Callable[[], str | None]:
    def probe() -> str | None:
        try:
            if settings.python:
                _remembered_site_info(settings.python, settings.guard_dir / "interpreter.json")
            return fingerprint(settings.python)
        except (OSError, subprocess.SubprocessError, ValueError, KeyError):
            return None  # unknown: never mistaken for "unchanged", see Engine._preconditions

    return probe


def interpreter(settings: Settings) -> str:
    return settings.python or sys.executable
