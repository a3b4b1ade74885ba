"""Recorded reflective reads: the gate on a reader's edges, the names carried through the
ingest's charges, their storage, and the recorder that sees them."""

from __future__ import annotations

import builtins
import importlib
import inspect
import sys
import types
from collections import defaultdict

import attrs
import pytest

from guard_adapters.coverage.charges import charge_consumed
from guard_adapters.coverage.payload import CollectorPayload
from guard_adapters.coverage.reflected import NameCodes, recorded_files
from guard_adapters.falkordb.codec import decode_lines, decode_names, encode_edge
from guard_adapters.pytest.reflection import UNNAMED, ReflectionRecorder, object_names
from guard_core.evidence import RunEvidence, iter_edges
from guard_core.model import CoverEdge
from guard_core.recorded_reads import recorded_edges

COMPUTED_REF = ".*~"
SIGNATURE_REF = ".__signature__~"


def _edge(test: str, names: frozenset[str] | None) -> CoverEdge:
    return CoverEdge("pkg/m.py::reader", test, lines=frozenset({3}), names=names)


def test_a_computed_read_keeps_the_tests_that_looked_up_a_changed_name() -> None:
    edges = [
        _edge("t_colour", frozenset({".colour"})),
        _edge("t_size", frozenset({".size"})),
        _edge("t_unknown", None),  # not recorded: kept
        _edge("t_none", frozenset()),  # ran the reader, looked nothing up
    ]
    kept = recorded_edges(edges, {COMPUTED_REF}, {"pkg.m.Settings.colour"})
    assert [e.test for e in kept] == ["t_colour", "t_unknown"]


def test_a_reader_with_any_other_read_keeps_every_edge() -> None:
    edges = [_edge("t_size", frozenset({".size"}))]
    assert recorded_edges(edges, {COMPUTED_REF, ".colour"}, {"pkg.m.Settings.colour"}) == edges
    assert recorded_edges(edges, {"pkg.m.Settings"}, {"pkg.m.Settings.colour"}) == edges


def test_an_introspection_keeps_the_tests_that_gave_it_the_changed_object() -> None:
    names = {"pkg.m.scale.__signature__", "pkg.m.scale.__defaults__"}
    edges = [
        _edge("t_scale", frozenset({"=scale"})),
        _edge("t_lambda", frozenset({"=test_f.<locals>.<lambda>"})),
        _edge("t_unnamed", frozenset({UNNAMED})),
        _edge("t_nested", frozenset({"=outer.<locals>.scale"})),  # another function
    ]
    kept = recorded_edges(edges, {SIGNATURE_REF}, names)
    assert [e.test for e in kept] == ["t_scale", "t_unnamed"]
    # a nested one, however it is named; a qualified name without its module may be it too
    nested = {"pkg.m.outer.<locals>.scale.__signature__"}
    assert [e.test for e in recorded_edges(edges, {SIGNATURE_REF}, nested)] == [
        "t_scale",
        "t_unnamed",
        "t_nested",
    ]
    assert [
        e.test for e in recorded_edges(edges, {SIGNATURE_REF}, {"pkg.m.outer.scale.__signature__"})
    ] == ["t_scale", "t_unnamed", "t_nested"]


def test_a_class_given_to_an_introspection_reads_its_methods_signatures() -> None:
    names = {"pkg.m.Model.__init__.__signature__"}
    edges = [_edge("t_model", frozenset({"=Model"})), _edge("t_other", frozenset({"=Other"}))]
    kept = recorded_edges(edges, {SIGNATURE_REF}, names)
    assert [e.test for e in kept] == ["t_model"]


def test_a_looked_up_name_is_no_signature_and_a_signature_no_name() -> None:
    edges = [_edge("t", frozenset({".scale", "=colour"}))]
    assert recorded_edges(edges, {SIGNATURE_REF}, {"pkg.m.scale.__signature__"}) == []
    assert recorded_edges(edges, {COMPUTED_REF}, {"pkg.m.C.colour"}) == []


def test_names_survive_a_cache_fills_charge() -> None:
    codes = NameCodes()
    by_context = {
        "t": {"pkg/m.py::reader": {2}},
        "<seg>1": {"pkg/m.py::f": {3} | codes.encode([".api"])},
    }
    charged: dict[str, dict[str, set[int]]] = {
        ctx: defaultdict(set, {k: set(v) for k, v in files.items()})
        for ctx, files in by_context.items()
    }
    charge_consumed(
        defaultdict(lambda: defaultdict(set), charged),
        {"t": ["<seg>1"]},
        set(),
        ("<seg>",),
        "<own>",
    )
    _, names = codes.decode({k: frozenset(v) for k, v in charged["t"].items()})
    assert names == {"pkg/m.py::f": frozenset({".api"})}


def test_names_ride_with_lines_through_charges_and_come_apart_per_test() -> None:
    codes = NameCodes()
    charged = {"pkg/m.py::f": {3, 4} | codes.encode([".a", "=g"]), "pkg/m.py::h": {7}}
    lines, names = codes.decode(charged)
    assert lines == {"pkg/m.py::f": {3, 4}, "pkg/m.py::h": {7}}
    assert names == {"pkg/m.py::f": frozenset({".a", "=g"})}
    assert codes.encode([".a"]) == codes.encode([".a"])  # one code per name


def test_an_edge_knows_its_names_only_where_every_call_was_recorded() -> None:
    run = RunEvidence(
        executed={"t": {"pkg/m.py::f": frozenset({3}), "pkg/n.py::g": frozenset({5})}},
        outcomes={},
        duration_ms=0.0,
        reflected={"t": {"pkg/m.py::f": frozenset({".a"})}},
        recorded_files=frozenset({"pkg/m.py"}),
    )
    assert {e.function: e.names for e in iter_edges(run)} == {
        "pkg/m.py::f": frozenset({".a"}),
        "pkg/n.py::g": None,
    }
    spawner = RunEvidence(
        executed=run.executed,
        outcomes={},
        duration_ms=0.0,
        spawners=frozenset({"t"}),
        reflected={},
        recorded_files=frozenset({"pkg/m.py"}),
    )
    assert {e.names for e in iter_edges(spawner)} == {None}  # its children were not recorded


def test_a_file_is_recorded_only_where_every_process_recorded_it() -> None:
    payload = CollectorPayload()
    assert recorded_files(payload, {"t": {"pkg/b.py::g": 1}}, (), ("<memo>",)) == frozenset()
    payload.add({"reflect": {"active": True, "unrecorded": ["pkg/a.py"]}})
    executed = {"t": {"pkg/a.py::f": 1, "pkg/b.py::g": 1}}
    assert recorded_files(payload, executed, (), ("<memo>",)) == {"pkg/b.py"}
    assert recorded_files(payload, executed, ("<memo>x",), ("<memo>",)) == frozenset()
    preloaded = attrs.evolve(payload, preloaded=["pkg/b.py"])  # imported before measuring
    assert recorded_files(preloaded, executed, (), ("<memo>",)) == frozenset()
    children = attrs.evolve(payload, children={"token": "t"})  # a measured child ran code
    assert recorded_files(children, executed, (), ("<memo>",)) == frozenset()
    payload.add({"reflect": {"active": False}})  # an xdist worker without it
    assert recorded_files(payload, executed, (), ("<memo>",)) == frozenset()
    payload.add({"reflect": {"active": True}})  # off once is off for the run
    assert recorded_files(payload, executed, (), ("<memo>",)) == frozenset()


def test_stored_names_survive_and_their_absence_reads_as_not_recorded() -> None:
    text = encode_edge({3, 4, 9}, frozenset({".a", "=pkg.f"}))
    assert decode_lines(text) == {3, 4, 9}
    assert decode_names(text) == {".a", "=pkg.f"}
    assert decode_names(encode_edge({3}, frozenset())) == frozenset()
    assert decode_names(encode_edge({3}, None)) is None
    assert decode_names("3-4") is None


class _Base:
    def __init__(self, x: int) -> None:
        self.x = x


class _Model(_Base):
    pass


def test_object_names_follow_what_a_signature_is_read_from() -> None:
    def wrapped(a: int) -> int:
        return a

    def wrapper(a: int) -> int:
        return a

    wrapper.__wrapped__ = wrapped  # type: ignore[attr-defined]
    assert f"={wrapped.__qualname__}" in object_names(wrapper)
    assert {"=_Model", "=_Base"} <= object_names(_Model)
    assert "=_Base" in object_names(_Base(1))  # an instance: its class
    assert "=_Base.__init__" in object_names(_Base(1).__init__)


def _recorder() -> tuple[types.SimpleNamespace, ReflectionRecorder]:
    """A recorder that takes this file for a repository file (``tests/x.py``), and the
    holder of its context, at ``t1``."""
    holder = types.SimpleNamespace(context="t1")
    return holder, ReflectionRecorder(lambda f: "tests/x.py" if f == __file__ else None, holder)


def test_the_recorder_sees_calls_from_repository_files_under_the_current_context() -> None:
    holder, recorder = _recorder()
    recorder.install()
    try:
        key = "x"
        getattr(_Base(1), key)
        holder.context = "t2"
        inspect.signature(_Model)
        assert hasattr(_Base(1), "y") is False
    finally:
        recorder.uninstall()
    assert recorder.active
    assert builtins.getattr is getattr and inspect.signature.__module__ == "inspect"
    seen = recorder.dump()
    assert [n for lines in seen["t1"]["tests/x.py"].values() for n in lines] == [".x"]
    t2 = {n for lines in seen["t2"]["tests/x.py"].values() for n in lines}
    assert {"=_Model", "=_Base", ".y"} <= t2


def test_a_look_repeated_at_one_site_is_recorded_under_each_context_that_makes_it() -> None:
    holder, recorder = _recorder()
    recorder.install()
    try:
        for context in ("t1", "t1", "t2", "t1", "t3"):
            holder.context = context
            for key in ("x", "x", "__class__"):
                getattr(_Base(1), key)
    finally:
        recorder.uninstall()
    seen = recorder.dump()
    assert sorted(seen) == ["t1", "t2", "t3"]
    for context in seen:
        [names] = seen[context]["tests/x.py"].values()  # one site: the loop's line
        assert names == [".__class__", ".x"]


def test_the_recorder_sees_the_modules_import_module_imported_and_puts_it_back() -> None:
    holder, recorder = _recorder()
    real_import, real_import_module = builtins.__import__, importlib.import_module
    recorder.install()
    try:
        importlib.import_module("json." + "decoder")
        holder.context = "t2"
        importlib.import_module(".utils", "email")
        assert builtins.__import__ is real_import  # import statements stay as they were
    finally:
        recorder.uninstall()
    assert recorder.active and importlib.import_module is real_import_module
    seen = {ctx: {n for lines in files["tests/x.py"].values() for n in lines}
            for ctx, files in recorder.dump().items()}  # fmt: skip
    assert seen == {"t1": {"@json.decoder"}, "t2": {"@email.utils"}}


def test_a_computed_import_keeps_the_tests_that_imported_a_changed_names_module() -> None:
    edges = [
        _edge("t_late", frozenset({"@pkg.late"})),
        _edge("t_package", frozenset({"@pkg"})),  # __import__("pkg.other") holds pkg
        _edge("t_other", frozenset({"@pkg.other"})),
        _edge("t_any", frozenset({"@*"})),
        _edge("t_unknown", None),
    ]
    kept = recorded_edges(edges, {".@~"}, {"pkg.late.TABLE"})
    assert [e.test for e in kept] == ["t_late", "t_package", "t_any", "t_unknown"]
    kept = recorded_edges(edges, {".@~"}, {"pkg.later.X"})  # a prefix is no module
    assert [e.test for e in kept] == ["t_package", "t_any", "t_unknown"]
    # imported from a folder on sys.path under a shorter name
    path = [_edge("t_path", frozenset({"@plain"})), _edge("t_other", frozenset({"@other"}))]
    kept = recorded_edges(path, {".@~"}, {"tests.apps.plain.VALUES"})
    assert [e.test for e in kept] == ["t_path"]
    # ran the call, imported nothing recorded: it failed, or no import was recorded then
    assert recorded_edges([_edge("t_none", frozenset({".x"}))], {".@~"}, {"pkg.late.T"})


def test_a_wrapper_replaced_during_the_run_makes_the_record_inactive() -> None:
    recorder = ReflectionRecorder(lambda f: None, types.SimpleNamespace(context="t"))
    recorder.install()
    try:
        mine = builtins.getattr
        builtins.getattr = lambda *a: None  # type: ignore[assignment]
        recorder.check()
        builtins.getattr = mine
    finally:
        recorder.uninstall()
    assert not recorder.active
    assert builtins.getattr is getattr  # put back


def test_a_wrapper_patched_and_put_back_between_two_checks_ends_the_record() -> None:
    recorder = ReflectionRecorder(lambda f: None, types.SimpleNamespace(context="t"))
    recorder.install()
    try:
        with pytest.MonkeyPatch.context() as patch:  # as a test's own `with` block does
            patch.setattr(inspect, "signature", lambda fn: None)
        recorder.check()
    finally:
        recorder.uninstall()
    assert not recorder.active
    assert type(inspect) is types.ModuleType and type(builtins) is types.ModuleType


def _module(name: str, file: str, source: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = file
    exec(compile(source, file, "exec"), module.__dict__)
    return module


def test_a_module_outside_the_repository_gets_the_real_builtins_at_a_pause_only() -> None:
    recorder = ReflectionRecorder(
        lambda f: None if "site-packages" in f else "pkg/m.py", types.SimpleNamespace(context="")
    )
    lib = _module(
        "fake_lib",
        "/venv/site-packages/fake_lib.py",
        "def look(o):\n    return getattr(o, 'real')\n",
    )
    lib.hasattr = "its own"  # type: ignore[attr-defined]
    sys.modules["fake_lib"] = lib
    recorder.install()
    try:
        assert lib.look(1) == 1
        assert "getattr" not in vars(lib)  # not in the middle of a call
        recorder.bind_outside()
        assert isinstance(vars(lib)["getattr"], types.BuiltinFunctionType)
        assert vars(lib)["hasattr"] == "its own"
    finally:
        recorder.uninstall()
        del sys.modules["fake_lib"]
    assert "getattr" not in vars(lib) and vars(lib)["hasattr"] == "its own"


def test_a_repository_module_that_binds_a_real_builtin_is_unrecorded_even_once_unloaded() -> None:
    recorder = ReflectionRecorder(
        lambda f: "pkg/starred.py" if f.endswith("starred.py") else None,
        types.SimpleNamespace(context=""),
    )
    real = builtins.getattr  # what `from lib import *` binds once lib has the real builtins
    recorder.install()
    try:
        starred = _module(
            "starred", "/repo/pkg/starred.py", "def f(o, k):\n    return getattr(o, k)\n"
        )
        starred.getattr = real  # type: ignore[attr-defined]
        recorder.ran(starred)  # imported, then dropped from sys.modules
        assert recorder.unrecorded({}) == ["pkg/starred.py"]
    finally:
        recorder.uninstall()
