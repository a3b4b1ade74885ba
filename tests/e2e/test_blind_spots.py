"""Code the per-test evidence cannot see, on a real project (git, pytest, coverage, FalkorDB):
modules that appear where code already names them, folders scanned for plug-ins, modules that
shadow importable names, and code that runs only in a child Python process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from guard_core.api import Guard
from guard_core.model import Level
from tests.e2e.conftest import ingested_project

FILES = {
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    "pkg/__init__.py": "",
    "pkg/feature.py": (
        "try:\n    from pkg.extra import BOOST\nexcept ImportError:\n    BOOST = 1\n\n\n"
        "def boosted(x):\n    return x * BOOST\n"
    ),
    "pkg/loader.py": (
        "import importlib\n\n\n"
        "def optional(name):\n"
        "    try:\n        return importlib.import_module('pkg.' + name)\n"
        "    except ImportError:\n        return None\n\n\n"
        "def plain(x):\n    return x + 1\n"
    ),
    "pkg/plugins/__init__.py": (
        "import pkgutil\n\n\n"
        "def names():\n    return sorted(m.name for m in pkgutil.iter_modules(__path__))\n"
    ),
    "pkg/plugins/first.py": "",
    "pkg/cli.py": (
        "import sys\n\n\n"
        "def main():\n    print(sum(int(a) for a in sys.argv[1:]))\n\n\n"
        "if __name__ == '__main__':\n    main()\n"
    ),
    "tests/test_feature.py": (
        "from pkg.feature import boosted\n\n\ndef test_boosted():\n    assert boosted(2) == 2\n"
    ),
    "tests/test_loader.py": (
        "from pkg.loader import optional, plain\n\n\n"
        "def test_optional_absent():\n    assert optional('ghost') is None\n\n\n"
        "def test_plain():\n    assert plain(1) == 2\n"
    ),
    "tests/test_plugins.py": (
        "from pkg.plugins import names\n\n\ndef test_names():\n    assert names() == ['first']\n"
    ),
    "tests/test_cli.py": (
        "import subprocess\nimport sys\n\n\n"
        "def test_cli_in_a_child():\n"
        "    out = subprocess.run([sys.executable, '-m', 'pkg.cli', '2', '3'],\n"
        "                         capture_output=True, text=True, check=True).stdout\n"
        "    assert out.strip() == '5'\n"
    ),
}

FEATURE = "tests/test_feature.py::test_boosted"
PLAIN = "tests/test_loader.py::test_plain"
ABSENT = "tests/test_loader.py::test_optional_absent"
NAMES = "tests/test_plugins.py::test_names"
CLI = "tests/test_cli.py::test_cli_in_a_child"


@pytest.fixture(scope="module")
def guard(tmp_path_factory: pytest.TempPathFactory, falkordb_url: str) -> Iterator[Guard]:
    # the child process imports pkg from the repository
    with ingested_project(tmp_path_factory.mktemp("blind"), FILES, falkordb_url, "blind",
                          environ={"PYTHONPATH": "{repo}"}) as g:  # fmt: skip
        yield g


def write(repo: Path, path: str, text: str) -> None:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(text, encoding="utf-8")


def test_a_new_module_that_an_optional_import_names_selects_its_importers(
    guard: Guard, tree: Path
) -> None:
    write(tree, "pkg/extra.py", "BOOST = 3\n")
    d = guard.check()
    assert FEATURE in d.tests and d.level is not Level.RUN_ALL
    assert "names-new-module" in {r.rule for r in d.reasons[FEATURE]}
    report = guard.run(stream=False)
    assert report.exit_code == 1 and FEATURE in report.failed


def test_a_new_module_that_import_module_may_load_selects_the_caller_tests(
    guard: Guard, tree: Path
) -> None:
    write(tree, "pkg/ghost.py", "raise RuntimeError('boom')\n")
    d = guard.check()
    assert ABSENT in d.tests
    assert PLAIN not in d.tests and FEATURE not in d.tests


def test_a_new_plugin_module_selects_the_test_that_scans_its_folder(
    guard: Guard, tree: Path
) -> None:
    write(tree, "pkg/plugins/second.py", "")
    d = guard.check()
    assert NAMES in d.tests
    assert PLAIN not in d.tests


@pytest.mark.parametrize("path", ["tests/json.py", "tests/test_feature_dup/test_feature.py"])
def test_a_new_module_that_shadows_an_importable_name_is_run_all(
    guard: Guard, tree: Path, path: str
) -> None:
    write(tree, path, "X = 1\n")
    d = guard.check()
    assert d.level is Level.RUN_ALL
    assert "shadowing" in {o.kind for o in d.overrides}


def test_code_run_only_in_a_measured_child_process_selects_the_test_that_spawned_it(
    guard: Guard, tree: Path
) -> None:
    text = (tree / "pkg/cli.py").read_text()
    write(tree, "pkg/cli.py", text.replace("sum(int(a)", "sum(2 * int(a)"))
    d = guard.check()
    assert CLI in d.tests
    # the child was measured: what it ran is the test's own evidence, no blanket spawn
    assert CLI not in guard.store.spawning_tests()
    assert "covers" in {r.rule for r in d.reasons[CLI]} or d.level is Level.RUN_ALL
    report = guard.run(stream=False)
    assert report.exit_code == 1 and CLI in report.failed
