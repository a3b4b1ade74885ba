"""Modules imported under no name the index knows (a folder put on ``sys.path``, an import by
a computed name): a changed name of theirs is read under their shorter dotted names, and by
any code reading it as an attribute, since that code may hold the module."""

from __future__ import annotations

from guard_core.model import CoverEdge
from guard_core.module_names import shorter_names, unnamed_modules
from guard_core.selection import ReadGate, Selection, select_readers
from guard_core.testing import FakeStore, FileNode

HELPER = "tests.apps.plain"
BY_PATH = "tests/test_apps.py::test_by_path"  # sys.path.insert(...); import plain
BY_CALL = "tests/test_apps.py::test_by_call"  # importlib.import_module(name).VALUES
OTHER = "tests/test_other.py::test_other"  # reads .VALUES of something else, never ran it


def store(*importers: str) -> FakeStore:
    files = {
        "tests/apps/plain.py": FileNode("tests/apps/plain.py", "1", HELPER),
        "tests/test_apps.py": FileNode("tests/test_apps.py", "2", "tests.test_apps"),
        "tests/test_one.py": FileNode("tests/test_one.py", "3", "tests.test_one"),
        **{
            f"pkg/{i}.py": FileNode(f"pkg/{i}.py", str(i), f"pkg.m{i}", imports=(name,))
            for i, name in enumerate(importers)
        },
    }
    return FakeStore(
        files=files,
        modules=[n.module for n in files.values() if n.module],
        refs={BY_PATH: ["plain.VALUES"]},
        attributes={BY_CALL: ["VALUES"], OTHER: ["VALUES"]},
        lines_read={BY_CALL: {".VALUES": frozenset({7})}, OTHER: {".VALUES": frozenset({30})}},
        edges=[
            CoverEdge(BY_PATH, BY_PATH, lines=frozenset({3, 4})),
            CoverEdge(BY_CALL, BY_CALL, lines=frozenset({6, 7})),
            CoverEdge(OTHER, OTHER, lines=frozenset({29})),
        ],
        tests=[BY_PATH, BY_CALL, OTHER],
    )


def readers(s: FakeStore) -> set[str]:
    selection = Selection()
    select_readers(s, [f"{HELPER}.VALUES"], {}, selection, "edit", 0.0, gate=ReadGate(True))
    return set(selection.reasons)


def test_a_module_no_file_imports_by_name_is_read_under_its_shorter_names_and_as_attributes(
) -> None:  # fmt: skip
    s = store()
    assert unnamed_modules(s, [HELPER, "tests.test_apps"]) == {HELPER}  # pytest's own aside
    assert shorter_names(s, [f"{HELPER}.VALUES"]) == {"apps.plain.VALUES", "plain.VALUES"}
    # the attribute reader that never ran its reading line stays out
    assert readers(s) == {BY_PATH, BY_CALL}


def test_a_module_imported_by_name_is_read_only_through_that_name() -> None:
    s = store(HELPER)
    assert unnamed_modules(s, [HELPER]) == set()
    assert shorter_names(s, [f"{HELPER}.VALUES"]) == set()
    assert readers(s) == set()
