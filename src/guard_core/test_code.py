"""Test modules and ``conftest.py`` are code with evidence: the rules that pytest's own reading
of them adds to the covering edges.

pytest reads names that no code reads (``pytestmark``, ``collect_ignore``, ``pytest_*`` hooks,
xunit ``setup_*`` functions, fixtures by name), so a change to a test module's or conftest's
top-level code selects every test it can reach: the module's tests, or the tests under the
conftest's folder. A changed test function selects that test.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath

from guard_core.model import (
    CLASS_BODY,
    MODULE_SCOPE,
    ChangedFile,
    ChangedRegion,
    ChangeKind,
    FileKind,
    FileRole,
    Reason,
    RegionKind,
    split_id,
)

PYTEST_NAMES = frozenset(
    {
        "setup_module",
        "teardown_module",
        "setup_function",
        "teardown_function",
        "setup_method",
        "teardown_method",
        "setup_class",
        "teardown_class",
        "setup",
        "teardown",
        "setUp",
        "tearDown",
        "setUpClass",
        "tearDownClass",
        "setUpModule",
        "tearDownModule",
        "asyncSetUp",
        "asyncTearDown",
    }
)
"""Functions pytest or unittest call by name in a test module."""


def _name(region: ChangedRegion) -> str:
    return split_id(region.id)[1].rsplit(".", 1)[-1]


def folder_of(conftest: str) -> str:
    parent = PurePosixPath(conftest).parent.as_posix()
    return "" if parent == "." else parent + "/"


def reached_tests(file: ChangedFile, known: Iterable[str]) -> list[str]:
    """The tests a test module's or conftest's pytest-read code reaches. A collected test
    module runs as its file: its top-level code may make tests no index lists
    (``test_x = make()``), which its known tests would leave out. So do the files of a
    conftest's known tests: its hooks may make more of them (``pytest_generate_tests``,
    ``pytest_collect_file``)."""
    if file.role is FileRole.CONFTEST:
        folder = folder_of(file.path)
        return sorted({split_id(t)[0] for t in known if t.startswith(folder)})
    if file.collects and file.kind is not FileKind.DELETED:
        return [file.path]
    paths = {file.path, file.old_path}
    return [t for t in known if split_id(t)[0] in paths]


def test_code_reasons(
    regions: Iterable[ChangedRegion], files: Mapping[str, ChangedFile], known: Iterable[str]
) -> list[tuple[str, Reason]]:
    """Tests selected by pytest's reading of the changed regions of test modules and
    conftest.py files (on top of their covering edges)."""
    regions = list(regions)
    known = list(known)
    defined: dict[str, set[str]] = {}  # file -> qualnames of changed functions and classes
    for r in regions:
        if r.region is not RegionKind.MODULE:
            defined.setdefault(r.file, set()).add(split_id(r.id)[1].removesuffix(f".{CLASS_BODY}"))
    out: list[tuple[str, Reason]] = []
    for region in regions:
        file = files.get(region.file)
        whole = file is not None and file.collects and file.kind is not FileKind.MODIFIED
        if region.test_id is not None and region.kind is not ChangeKind.DELETED and not whole:
            out.append((region.test_id, Reason("changed-test", region.id)))
        if file is None or file.role not in (FileRole.TEST, FileRole.CONFTEST):
            continue
        if region.test_id is None and _read_by_pytest(region, defined.get(region.file, set())):
            where = "conftest" if file.role is FileRole.CONFTEST else "test-module"
            out += [(t, Reason(f"{where}-code", region.id)) for t in reached_tests(file, known)]
    return out


def _read_by_pytest(region: ChangedRegion, defined: set[str]) -> bool:
    """Whether pytest itself may read the changed code: a hook or xunit function, or a
    top-level or class-body statement other than the ``def``/``class`` of a changed function
    or class (those are judged as themselves)."""
    if region.region is RegionKind.FUNCTION:
        name = _name(region)
        return name.startswith("pytest_") or name in PYTEST_NAMES
    if region.side_effects:
        return True
    scope = split_id(region.id)[1].removesuffix(f".{CLASS_BODY}")
    scope = "" if scope == MODULE_SCOPE else scope + "."
    return not region.names or any(
        f"{scope}{n.rsplit('.', 1)[-1]}" not in defined for n in region.names
    )


def gone_tests(regions: Iterable[ChangedRegion], files: Iterable[ChangedFile]) -> set[str]:
    """Test ids that no longer exist: deleted tests and the tests of deleted modules."""
    gone = {r.test_id for r in regions if r.kind is ChangeKind.DELETED and r.test_id}
    deleted = {f.path for f in files if f.kind is FileKind.DELETED}
    deleted |= {f.old_path for f in files if f.kind is FileKind.RENAMED and f.old_path}
    return gone | {f"file:{p}" for p in deleted}


def exists(test: str, gone: set[str]) -> bool:
    return test not in gone and f"file:{split_id(test)[0]}" not in gone
