"""Test modules and conftest.py as code with evidence (engine on in-memory fakes)."""

from __future__ import annotations

import attrs

from guard_core.model import (
    ChangedFile,
    ChangedRegion,
    ChangeKind,
    CoverEdge,
    FileKind,
    FileRole,
    Level,
    RegionKind,
)
from guard_core.ports import FunctionFacts
from tests.unit.test_engine import change, engine, store

T1 = "t/test_a.py::test_1"
T2 = "t/test_a.py::test_2"
T3 = "t/test_b.py::test_3"
SUB = "t/sub/test_c.py::test_4"
FIX = "t/conftest.py::db"
HELP = "t/test_a.py::helper"
MOD_A = "t/test_a.py::<module>"


def _store():  # type: ignore[no-untyped-def]
    pairs = [
        (FIX, T1),
        (FIX, T3),
        (HELP, T2),
        ("t/test_a.py::test_1", T1),
        (MOD_A, T1),
        (MOD_A, T2),
        ("t/sub/conftest.py::<module>", SUB),
    ]
    edges = [CoverEdge(f, t, last_verified_sha="base") for f, t in pairs]
    facts = {
        fid: FunctionFacts(fid, fid.split("::")[0], False, False)
        for fid in (FIX, HELP, T1, MOD_A, "t/conftest.py::<module>", "t/sub/conftest.py::<module>")
    }
    return store(edges=edges, functions=facts, tests=[T1, T2, T3, SUB])  # fmt: skip


def _file(path: str, role: FileRole = FileRole.TEST, kind: FileKind = FileKind.MODIFIED):  # type: ignore[no-untyped-def]
    return ChangedFile(path, kind, role, collects=role is FileRole.TEST)


def _region(fid: str, **kw: object) -> ChangedRegion:
    kind = kw.pop("kind", ChangeKind.MODIFIED)
    return ChangedRegion(id=fid, file=fid.split("::")[0], kind=kind, **kw)  # type: ignore[arg-type]


def test_an_assertion_edit_selects_that_test_only() -> None:
    r = _region("t/test_a.py::test_1", test_id=T1)
    d = engine(change(r, files=(_file("t/test_a.py"),)), _store()).check()
    assert d.level is Level.SUBSET and d.tests == (T1,)
    assert {x.rule for x in d.reasons[T1]} >= {"changed-test"}


def test_a_fixture_edit_selects_the_tests_that_use_it() -> None:
    r = _region(FIX)
    d = engine(change(r, files=(_file("t/conftest.py", FileRole.CONFTEST),)), _store()).check()
    assert d.tests == (T1, T3)


def test_a_helper_edit_selects_its_callers() -> None:
    d = engine(change(_region(HELP), files=(_file("t/test_a.py"),)), _store()).check()
    assert d.tests == (T2,)


def test_a_new_test_selects_itself_and_a_new_test_file_runs_whole() -> None:
    r = _region("t/test_a.py::test_9", kind=ChangeKind.ADDED, test_id="t/test_a.py::test_9")
    new = _file("t/test_new.py", kind=FileKind.ADDED)
    d = engine(change(r, files=(_file("t/test_a.py"), new)), _store()).check()
    assert d.tests == ("t/test_a.py::test_9", "t/test_new.py")


def test_conftest_top_level_code_selects_the_tests_under_its_folder() -> None:
    r = _region("t/sub/conftest.py::<module>", region=RegionKind.MODULE, body_changed=False,
                definition_changed=True, names=("collect_ignore",))  # fmt: skip
    d = engine(change(r, files=(_file("t/sub/conftest.py", FileRole.CONFTEST),)), _store()).check()
    assert d.tests == ("t/sub/test_c.py",)  # as a file: its hooks may make more tests


def test_a_new_hook_in_conftest_selects_the_tests_under_its_folder() -> None:
    r = _region("t/conftest.py::pytest_collection_modifyitems", kind=ChangeKind.ADDED)
    d = engine(change(r, files=(_file("t/conftest.py", FileRole.CONFTEST),)), _store()).check()
    assert set(d.tests) == {"t/test_a.py", "t/test_b.py", "t/sub/test_c.py"}


def test_test_module_top_level_code_runs_that_module_whole() -> None:
    """Its known tests are not enough: top-level code may make tests no index lists
    (``test_x = make()``); the module's file runs every test pytest collects from it."""
    r = _region(MOD_A, region=RegionKind.MODULE, body_changed=False, definition_changed=True,
                names=("pytestmark",))  # fmt: skip
    d = engine(change(r, files=(_file("t/test_a.py"),)), _store()).check()
    assert d.tests == ("t/test_a.py",)


def test_a_test_method_added_to_a_base_class_runs_the_modules_that_use_it_whole() -> None:
    """Every test class inheriting the method (or a ``test*`` attribute of its body) gets a
    new test no index lists: the test module importing the base runs whole, and the one whose
    class derives from it through a mixin of another module."""
    s = _store()
    s.import_edges.add(("t/test_a.py", "t/base.py"))
    s.defined_in.update({T1: "t/test_a.py", T3: "t/test_b.py"})
    s.refs.update({"t/mixins.py::Mixin.<body>": ["t.base.Base"],
                   "t/test_b.py::TestB.<body>": ["t.mixins.Mixin"]})  # fmt: skip
    s.dotted.update({"t/mixins.py::Mixin.<body>": "t.mixins.Mixin.<body>",
                     "t/test_b.py::TestB.<body>": "t.test_b.TestB.<body>"})  # fmt: skip
    new = _region("t/base.py::Base.test_new", kind=ChangeKind.ADDED, owner_class="t.base.Base")
    base = ChangedFile("t/base.py", FileKind.MODIFIED, FileRole.TEST)  # a helper: not collected
    assert engine(change(new, files=(base,)), s).check().tests == ("t/test_a.py", "t/test_b.py")
    helper = attrs.evolve(new, id="t/base.py::Base.check_new")
    assert engine(change(helper, files=(base,)), s).check().tests == ()
    # an attribute bound in the class body is collected as well: `test_alias = check_new`
    s.functions["t/base.py::Base.<body>"] = FunctionFacts("t/base.py::Base.<body>", "t/base.py",
                                                         False, False)  # fmt: skip
    s.edges.append(CoverEdge("t/base.py::Base.<body>", T1, last_verified_sha="base"))
    body = _region("t/base.py::Base.<body>", region=RegionKind.CLASS_BODY, body_changed=False,
                   definition_changed=True, names=("t.base.Base.test_alias",),
                   owner_class="t.base.Base")  # fmt: skip
    assert engine(change(body, files=(base,)), s).check().tests == ("t/test_a.py", "t/test_b.py")
    plain = attrs.evolve(body, names=("t.base.Base.LIMIT",))
    assert "t/test_b.py" not in engine(change(plain, files=(base,)), s).check().tests
    source = attrs.evolve(base, role=FileRole.SOURCE)  # test_client_class = None: no test
    assert "t/test_b.py" not in engine(change(body, files=(source,)), s).check().tests
    # a changed method of a source class that only has a test-like name (``test_client``):
    # its def is judged as itself, no inheriting test module runs whole for it
    client = _region("t/base.py::Base.test_alias", body_changed=False, definition_changed=True,
                     names=("t.base.Base.test_alias",), owner_class="t.base.Base")  # fmt: skip
    s.functions[client.id] = FunctionFacts(client.id, "t/base.py", False, False)
    s.edges.append(CoverEdge(client.id, T1, last_verified_sha="base"))
    decided = engine(change(body, client, files=(base,)), s).check().tests
    assert "t/test_b.py" not in decided


def test_a_deleted_test_selects_nothing_that_cannot_run() -> None:
    r = _region("t/test_a.py::test_1", kind=ChangeKind.DELETED, test_id=T1)
    d = engine(change(r, files=(_file("t/test_a.py"),)), _store()).check()
    assert T1 not in d.tests and d.level is Level.SUBSET


def test_a_deleted_test_module_is_never_selected() -> None:
    r = _region(MOD_A, kind=ChangeKind.DELETED, region=RegionKind.MODULE, body_changed=False,
                definition_changed=True)  # fmt: skip
    d = engine(change(r, files=(_file("t/test_a.py", kind=FileKind.DELETED),)), _store()).check()
    assert not any(t.startswith("t/test_a.py") for t in d.tests)
