"""Hostile paths: spaces, quotes, backslashes, unicode, leading dashes, glob and Cypher
metacharacters in tracked modules, data files and new test files (the repository itself lives
under such a name); symlinks that point out of the repository, at `/`, in a loop, nowhere."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hostile.conftest import Sample
from tests.hostile.harness import SUITE, assert_wider, replace, write

NAMES = {
    "space": "with space",
    "single-quote": "it's",
    "double-quote": 'say "hi"',
    "backslash": "back\\slash",
    "unicode": "ünïcødé_名前",
    "leading-dash": "-leading-dash",
    "option-like": "--output=x",
    "cypher": "x'}) MATCH (n) DETACH DELETE n",
    "cypher-params": "$p {x} `y`",
    "glob": "star*[q]?",
    "tab": "tab\there",
}


def _files() -> dict[str, str]:
    files = {
        "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
        ".gitignore": "__pycache__/\n.pytest_cache/\n",
    }
    loads, reads = [], []
    for i, (key, name) in enumerate(NAMES.items()):
        files[f"{name}/mod.py"] = f"def value():\n    return {name!r}\n"
        files[f"{name}/data.txt"] = "ok\n"
        slug = key.replace("-", "_")
        loads.append(f"def test_mod_{slug}():\n    assert load({i}).value() == NAMES[{i}]\n")
        reads.append(
            f"def test_data_{slug}():\n"
            f"    assert (ROOT / NAMES[{i}] / 'data.txt').read_text() == 'ok\\n'\n"
        )
    header = (
        "import importlib.util\nfrom pathlib import Path\n\n"
        "ROOT = Path(__file__).resolve().parents[1]\n"
        f"NAMES = {list(NAMES.values())!r}\n\n\n"
    )
    files["tests/test_mods.py"] = (
        header + "def load(i):\n"
        "    path = ROOT / NAMES[i] / 'mod.py'\n"
        "    spec = importlib.util.spec_from_file_location(f'hostile_{i}', path)\n"
        "    module = importlib.util.module_from_spec(spec)\n"
        "    spec.loader.exec_module(module)\n"
        "    return module\n\n\n" + "\n\n".join(loads)
    )
    files["tests/test_data.py"] = header + "\n\n".join(reads)
    return files


FILES = _files()
NAMED_SUITE = [
    *(f"tests/test_mods.py::test_mod_{k.replace('-', '_')}" for k in NAMES),
    *(f"tests/test_data.py::test_data_{k.replace('-', '_')}" for k in NAMES),
]


@pytest.fixture(scope="module")
def named_shared(sample_factory: Callable[..., Sample]) -> Sample:
    # the repository's own folder has a hostile name too
    return sample_factory("paths-named", FILES, NAMED_SUITE, dirname="-repo 'q' ü")


@pytest.fixture
def named(named_shared: Sample):  # type: ignore[no-untyped-def]
    named_shared.reset()
    yield named_shared
    named_shared.reset()


@pytest.mark.parametrize("key", list(NAMES))
def test_edit_module_at_hostile_path(named: Sample, key: str) -> None:
    name = NAMES[key]
    replace(named.repo, f"{name}/mod.py", "return ", "return 'changed' + ")
    decision = named.check()
    assert_wider(decision, [f"tests/test_mods.py::test_mod_{key.replace('-', '_')}"], NAMED_SUITE)
    named.assert_graph_unchanged()
    named.assert_run_fails()


@pytest.mark.parametrize("key", list(NAMES))
def test_edit_data_file_at_hostile_path(named: Sample, key: str) -> None:
    write(named.repo, f"{NAMES[key]}/data.txt", "changed\n")
    decision = named.check()
    assert_wider(decision, [f"tests/test_data.py::test_data_{key.replace('-', '_')}"], NAMED_SUITE)
    named.assert_graph_unchanged()


@pytest.mark.parametrize("key", list(NAMES))
def test_new_test_file_at_hostile_path(named: Sample, key: str) -> None:
    name = NAMES[key]
    path = f"tests/{name}/test_{name}.py"
    write(named.repo, path, "def test_new():\n    assert False\n")
    new = f"{path}::test_new"
    decision = named.check(suite=[*NAMED_SUITE, new])
    assert_wider(decision, [new], [*NAMED_SUITE, new])
    named.assert_graph_unchanged()


# -- symlinks ------------------------------------------------------------------------------


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


SYMLINKS: dict[str, tuple[Callable[[Path, Path], None], list[str]]] = {
    "module-out-of-repo": (
        lambda r, o: os.symlink(write(o, "extra.py", "EXTRA = True\n"), r / "pkg/extra.py"),
        ["tests/test_optional.py::test_extra_absent"],
    ),
    "plugin-out-of-repo": (
        lambda r, o: os.symlink(write(o, "beta.py", "NAME = 'beta'\n"), r / "pkg/plugins/beta.py"),
        ["tests/test_plugins.py::test_discovered"],
    ),
    "tracked-data-becomes-link-out": (
        lambda r, o: (
            (r / "pkg/data/words.txt").unlink(),
            os.symlink(write(o, "words.txt", "gamma\n"), r / "pkg/data/words.txt"),
        ),
        ["tests/test_text.py::test_words"],
    ),
    "tracked-module-becomes-link-to-etc": (
        lambda r, o: (
            (r / "pkg/helpers.py").unlink(),
            os.symlink("/etc/hostname", r / "pkg/helpers.py"),
        ),
        list(SUITE),
    ),
    "dir-link-to-root": (lambda r, o: os.symlink("/", r / "pkg/rootlink"), []),
    "dir-link-loop": (lambda r, o: os.symlink(".", r / "pkg/loop"), []),
    "dangling": (lambda r, o: os.symlink("/nonexistent/x.py", r / "pkg/dangling.py"), []),
}


@pytest.mark.parametrize("name", list(SYMLINKS))
def test_symlink(sample: Sample, tmp_path: Path, name: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    make, must = SYMLINKS[name]
    make(sample.repo, outside)
    before = {p: _digest(p) for p in outside.iterdir()}
    decision = sample.check(timeout=60)
    assert_wider(decision, must, SUITE)
    sample.assert_graph_unchanged()
    if must:
        sample.assert_run_fails()
    assert {p: _digest(p) for p in outside.iterdir()} == before, "a file outside was written"
