"""guard_core is the pure domain: importing any of it must load no adapter or heavy library."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import guard_core

# rich is absent from the list on purpose: structlog imports it for tracebacks when installed.
FORBIDDEN = (
    "guard_adapters",
    "falkordb",
    "redis",
    "libcst",
    "pytest",
    "_pytest",
    "coverage",
    "click",
)


def test_no_guard_core_module_imports_an_adapter() -> None:
    modules = [m.name for m in pkgutil.walk_packages(guard_core.__path__, "guard_core.")]
    assert "guard_core.policy" in modules  # the walk found the package
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_importing_guard_core_configures_no_logging() -> None:
    code = (
        "import logging, structlog, guard_core\n"
        "from guard_core.logs import get_logger\n"
        "get_logger('guard.test').warning('hello')\n"
        "print(structlog.is_configured())\n"
        "print([type(h).__name__ for h in logging.getLogger('guard').handlers])\n"
        "print(logging.getLogger().handlers)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:3] == ["False", "['NullHandler']", "[]"]
    assert "hello" not in out.stdout
