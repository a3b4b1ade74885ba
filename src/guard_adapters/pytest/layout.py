"""Pytest's discovery rules for one repository: which files, classes and functions are tests.

Read from the target's own pytest configuration (pytest.ini, pyproject.toml, tox.ini,
setup.cfg) so that ``python_files``/``python_classes``/``python_functions`` are honoured.
"""

from __future__ import annotations

import configparser
import contextlib
import fnmatch
import sys
from pathlib import Path, PurePosixPath

import attrs

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TEST_DIR_NAMES = frozenset({"tests", "test", "testing"})


@attrs.frozen
class PytestLayout:
    python_files: tuple[str, ...] = ("test_*.py", "*_test.py")
    python_classes: tuple[str, ...] = ("Test",)
    python_functions: tuple[str, ...] = ("test",)
    testpaths: tuple[str, ...] = ()

    def is_test_file(self, path: str) -> bool:
        p = PurePosixPath(path)
        return p.suffix == ".py" and any(
            fnmatch.fnmatch(p.name if "/" not in pat else path, pat) for pat in self.python_files
        )

    def in_test_tree(self, path: str) -> bool:
        """Inside a tests directory or a configured testpath (test support code lives here)."""
        parts = PurePosixPath(path).parts[:-1]
        if any(part in TEST_DIR_NAMES for part in parts):
            return True
        return any(path.startswith(tp.rstrip("/") + "/") for tp in self.testpaths if tp)

    @staticmethod
    def _matches(name: str, patterns: tuple[str, ...]) -> bool:
        # pytest: a pattern with glob characters is a glob, otherwise a prefix
        return any(
            fnmatch.fnmatch(name, p) if any(c in p for c in "*?[") else name.startswith(p)
            for p in patterns
        )

    def is_test_class(self, name: str) -> bool:
        return self._matches(name, self.python_classes)

    def is_test_function(self, name: str) -> bool:
        return self._matches(name, self.python_functions)


def split_option(value: object) -> tuple[str, ...]:
    """An ini option given as a string (whitespace-separated) or a TOML list."""
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, list):
        return tuple(str(v) for v in value)
    return ()


CONFIG_FILES = (
    ("pytest.ini", "pytest"),
    ("pyproject.toml", None),
    ("tox.ini", "pytest"),
    ("setup.cfg", "tool:pytest"),
)
_cache: dict[tuple[object, ...], PytestLayout] = {}


def load_layout(repo: Path) -> PytestLayout:
    """The layout from the first pytest configuration found, as pytest itself picks it
    (re-read only when one of the configuration files changed)."""
    key: list[object] = [str(repo)]
    for name, _ in CONFIG_FILES:
        with contextlib.suppress(OSError):
            stat = (repo / name).stat()
            key += [name, stat.st_mtime_ns, stat.st_size, stat.st_ino]
    found = _cache.get(tuple(key))
    if found is None:
        found = _cache[tuple(key)] = _read_layout(repo)
    return found


def pytest_options(folder: Path) -> dict[str, object] | None:
    """The pytest settings of the first configuration file in ``folder`` that has them, as
    pytest picks it (None: no file there configures pytest; an empty pytest.ini does)."""
    for name, section in CONFIG_FILES:
        path = folder / name
        if not path.is_file():
            continue
        try:
            if section is None:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
                found = data.get("tool", {}).get("pytest", {}).get("ini_options")
                if isinstance(found, dict):
                    return found
                continue
            parser = configparser.ConfigParser(interpolation=None)
            parser.read(path, encoding="utf-8")
            if parser.has_section(section) or name == "pytest.ini":
                return dict(parser.items(section)) if parser.has_section(section) else {}
        except (OSError, ValueError, configparser.Error, tomllib.TOMLDecodeError):
            continue  # an unreadable config: pytest's defaults are the safe reading
    return None


def _read_layout(repo: Path) -> PytestLayout:
    options = pytest_options(repo) or {}
    defaults = PytestLayout()
    return PytestLayout(
        python_files=split_option(options.get("python_files")) or defaults.python_files,
        python_classes=split_option(options.get("python_classes")) or defaults.python_classes,
        python_functions=split_option(options.get("python_functions")) or defaults.python_functions,
        testpaths=split_option(options.get("testpaths")),
    )
