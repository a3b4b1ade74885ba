"""Which tests each changed region selects, and why: the rules beyond plain covering edges.

Pure logic over the graph-store port. Every rule adds tests with a :class:`Reason`; none removes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence

import attrs

from guard_core.index_model import COMPUTED, THROUGH_CLASS, BodyStatements
from guard_core.memo import select_memo_users
from guard_core.model import (
    CLASS_BODY,
    MODULE_SCOPE,
    ChangedRegion,
    ChangeKind,
    ChangeSet,
    CoverEdge,
    FileKind,
    FileRole,
    Override,
    OverrideKind,
    Reason,
    RegionKind,
    node_id,
    split_id,
)
from guard_core.module_names import computed_importers, shorter_names, unnamed_modules
from guard_core.ports import EvidenceReader
from guard_core.recorded_reads import only_recorded, recorded_edges

_MAX_NAME_ROUNDS = 8  # import-time bindings followed this deep, then run-all


@attrs.define
class Selection:
    """Tests picked so far, each with its reasons; plus widenings that fired."""

    reasons: dict[str, list[Reason]] = attrs.field(factory=lambda: defaultdict(list))
    overrides: list[Override] = attrs.field(factory=list)
    _given: set[tuple[str, Reason]] = attrs.field(factory=set, init=False, repr=False)

    def add(self, test: str, reason: Reason) -> None:
        if (test, reason) not in self._given:  # a list scan made wide selections quadratic
            self._given.add((test, reason))
            self.reasons[test].append(reason)

    def add_edges(self, edges: Iterable[CoverEdge], rule: str) -> None:
        for e in edges:
            self.add(e.test, Reason(rule, e.function, e.confidence))


def judged_id(region: ChangedRegion) -> str:
    """The id whose recorded evidence speaks for a region (the old id of a rename)."""
    return region.old_id or region.id


def module_region(path: str) -> str:
    return node_id(path, MODULE_SCOPE)


def names_closure(store: EvidenceReader, names: Iterable[str]) -> set[str]:
    """The names plus every re-export of them (``pkg.X`` for ``pkg.mod.X``), transitively,
    and a name of a module no file imports by its dotted name under each shorter dotted name
    of that module (``plain.X`` for ``tests.apps.plain.X``: a folder put on ``sys.path``)."""
    found: set[str] = set()
    frontier = set(names)
    for _ in range(_MAX_NAME_ROUNDS):
        if not frontier:
            break
        frontier |= shorter_names(store, frontier)
        found |= frontier
        aliases = store.aliases_of(frontier)
        frontier = {a for alist in aliases.values() for a in alist} - found
    return found | frontier


def _reads(ref: str, names: set[str]) -> bool:
    if ref.endswith(".*"):  # `from m import *`: any name of m
        return any(_parent(n) == ref[:-2] for n in names)
    return ref in names or any(ref.startswith(n + ".") or n.startswith(ref + ".") for n in names)


def _follow_import_time_reads(
    store: EvidenceReader,
    readers: dict[str, tuple[str, str, str]],
    names: set[str],
    may_fail: bool = False,
) -> tuple[set[str], dict[str, str]]:
    """Module and class bodies that read ``names`` while importing: the names their reading
    statements bind (to follow), and the bodies whose reading statement may do more than bind
    a name, or fail (``may_fail``: the names may bind another kind of object): their
    import-time evidence is selected, everyone who imports them."""
    follow: set[str] = set()
    wide: dict[str, str] = {}
    if may_fail:
        return follow, {fid: ref for fid, (_, _, ref) in readers.items()}
    data = store.statement_bindings(readers)
    for fid, (qualname, dotted, ref) in readers.items():
        body = data.get(fid, BodyStatements())
        scope = dotted.rsplit(".", 1)[0] if dotted else ""
        hit = {r.statement for r in body.reads if _reads(r.name, names)}
        if not hit:
            if qualname.endswith(f".{CLASS_BODY}") and scope:
                follow.add(scope)  # read in the class header (bases, decorators): the class
            else:
                wide[fid] = ref
            continue
        for index in sorted(hit):
            binding = body.binding(index)
            if binding is None or binding.side_effects or not binding.names:
                wide[fid] = ref
            else:
                follow |= {f"{scope}.{n}" if scope else n for n in binding.names}
    # ``f = _f; f.__doc__ = ...``: following f finds whatever reads its attributes
    follow = {n for n in follow if not any(n.startswith(f"{m}.") for m in follow)}
    return follow, wide


def _parent(name: str) -> str:
    return name.rpartition(".")[0]


def member_tail(name: str) -> str:
    """``C.attr`` of ``pkg.mod.C.attr``: a member under any module's alias of its class."""
    return ".".join(name.rsplit(".", 2)[-2:])


def _in_tests(function_id: str) -> bool:
    """Test code: a test holding a function may call it wrongly on purpose (``pytest.raises
    (TypeError)``), which runs none of its body."""
    path, qual = split_id(function_id)
    return "test" in path.rsplit("/", 1)[-1] or qual.rsplit(".", 1)[-1].startswith("test")


def _readers(
    store: EvidenceReader,
    names: set[str],
    open_classes: frozenset[str] = frozenset(),
    called_in_evidence: frozenset[str] = frozenset(),
    properties: frozenset[str] = frozenset(),
    compatible_in_evidence: frozenset[str] = frozenset(),
) -> tuple[list[tuple[str, str, str, str]], set[str]]:
    """The code that reads ``names``: ``store.readers_of(names)``, where holding an object
    is not reading all of its attributes, plus the code that reads the attributes by name.

    - A module object passed around reads none of its names by itself (they are read as
      ``mod.NAME`` chains); only code with dynamic access reads whatever it holds.
    - A class held (built, subclassed, checked against) reads none of its attributes by
      itself: instances and subclasses share them, so the readers of ``C.x`` are the code
      that reads ``.x`` on any object (``getattr(o, "x")`` too), and the code that holds
      ``C`` and reads attributes by computed names (``vars``, ``__dict__``).
    - A class that derives from code outside the repository keeps its holders as readers of
      its members (a renamed method, a changed attribute): code Guard cannot see may read any
      of them by name. A method's signature (a new optional parameter, a changed default)
      such code reads by calling it, which the method's own evidence shows.
    - A module object that is held somewhere may reach code that reads ``.NAME`` on it.
    - The same for a function's attributes (``f.__doc__``, its signature's ``__defaults__``):
      calling it reads them in its own evidence, introspection reads them by name; test code
      that holds it stays a reader (it may call it wrongly on purpose).
    - A class's dunders (``__slots__``, ``__eq__``) are read by Python itself: every holder
      reads them.
    - Code that reads attributes by computed names (``getattr(o, k)``, ``vars``, ``dir``)
      reads any of them.
    - Code that only calls ``x.f(...)`` for a changed function ``f`` in
      ``called_in_evidence`` (by :func:`member_tail`; its covering tests are selected) is
      not a reader (nor, for a dunder method Python calls in ``compatible_in_evidence``, whose
      every old call binds as before, a holder of its class): a call that
      reaches ``f`` runs its body, and one that reaches another ``f`` is not affected.
    - The same for ``x.p`` of a changed plain property ``C.p`` in ``properties`` (by
      :func:`member_tail`): a read through an instance ran its getter. ``.p`` stays read
      by code that also names the class, and by the class's own methods (``C.p``,
      ``cls.p``: the property object, no getter runs).

    Every read of a function is a row (one function may read several names). Also returned:
    the functions whose read is not made where they name what they read (code with dynamic
    access to a module it holds), whose line evidence therefore cannot gate it.
    """
    stars = {f"{_parent(n)}.*" for n in names if "." in n}  # `from m import *` readers
    rows = store.readers_of(names | stars)
    holders = {
        ref
        for _, _, _, ref in rows
        if ref not in names and ref not in stars and not any(ref.startswith(n + ".") for n in names)
    }
    parents = {_parent(n) for n in names if "." in n}
    modules = store.modules_among(holders | parents)
    classes = store.classes_among((holders | parents) - modules)
    functions = store.functions_among((holders | parents) - modules - classes)
    # a module imported under no name the index knows, or by code that may import any
    # module (by a computed name, through ``sys.modules``), may be held by any code
    held_modules = (holders & modules) | unnamed_modules(store, parents & modules)
    owners = classes | functions | held_modules
    wanted = {n.rpartition(".")[2] for n in names if _parent(n) in owners}
    # ``x.name(...)`` reaches a changed function's body, in its evidence; any other callee
    # (a data attribute holding a callable, a function without evidence) is judged here
    wanted |= {
        n.rpartition(".")[2] + "()"
        for n in names
        if _parent(n) in owners and member_tail(n) not in called_in_evidence
    }
    called = {_parent(n) for n in names if not n.endswith(".__doc__")}  # calls may notice
    # test code holding ``obj.f`` (``pytest.raises(TypeError)`` around a call) for a changed
    # signature of ``f``: it may call it wrongly on purpose, which runs none of its body
    held_by_tests = {f.rpartition(".")[2] for f in functions & called} - wanted
    props = {n for n in names if member_tail(n) in properties}  # under any alias
    # a property read through a class object (``type(x).p``) runs no getter
    through_class_objects = {n.rpartition(".")[2] + THROUGH_CLASS for n in props}
    query = wanted | held_by_tests | through_class_objects
    attr_rows = store.attribute_readers(query) if wanted or held_by_tests else []
    indexed = attr_rows is not None
    star = {fid for fid, a in attr_rows or () if a in ("*", COMPUTED)}
    held = [fid for fid, _, _, ref in rows if ref in held_modules]
    dynamic = {f for f, fact in store.function_facts(held).items() if fact.has_dynamic_dispatch}
    # Python reads a class's dunders implicitly (__slots__, __eq__, __init__): every holder
    # reads them. A function's (__defaults__, __code__) are read by calling it, which its own
    # evidence shows, or by introspection, which reads them by name: holding it reads none
    implicit = {
        _parent(n)
        for n in names
        if n.rpartition(".")[2].startswith("__")
        and not n.endswith(".__doc__")
        # a method whose calls ran its body, each old call binding as before
        and member_tail(n) not in compatible_in_evidence
    } - functions
    leaves = {n.rpartition(".")[2] for n in names - props}
    read_by_getter = {n.rpartition(".")[2] for n in props} - leaves
    read_by_getter |= {f"{leaf}()" for leaf in read_by_getter}
    # ``C.p`` reads the property object, not its value: code that names the class, or its
    # own methods (``cls.p``, ``type(self).p``), still reads ``.p`` as before
    through_class = {fid for fid, _, _, ref in rows if ref in {_parent(n) for n in props}}
    own_class = {member_tail(_parent(n)).rpartition(".")[2] + "." for n in props}
    # outside code may read an open class's members by name (hasattr, a hook it looks up):
    # its holders stay readers of those; a method's signature it reads by calling it
    # (a property it reads through an instance runs the getter: in the getter's evidence)
    open_members = {c for c in open_classes if any(_parent(n) == c for n in names - props)}
    dropped = held_modules | (
        ((classes - open_members) | functions) - implicit if indexed else set()
    )
    # test code holding a property's class may set it, or read it by a name no index sees
    held_in_tests = (functions & called) | {_parent(n) for n in props}
    tests_code = {row[0] for row in rows if row[3] in held_in_tests and _in_tests(row[0])}
    out = [
        row
        for row in rows
        if row[3] not in dropped or row[0] in dynamic or row[0] in star or row[0] in tests_code
    ]
    ungated = {row[0] for row in out if row[3] in held_modules and row[0] in dynamic}
    # data attributes: code reading by computed names may read them; a method it reads so
    # it calls, which its own evidence shows
    data = {n for n in names if _parent(n) in classes | held_modules}
    objects = bool(data - store.functions_among(data)) if data else False
    objects = objects or bool(props)  # a property is an object in ``vars(C)``
    for fid, attr in attr_rows or ():
        if attr in held_by_tests and not _in_tests(fid):
            continue
        if (
            attr in read_by_getter
            and fid not in through_class
            and not split_id(fid)[1].startswith(tuple(own_class))
        ):
            continue
        if attr not in ("*", COMPUTED) or objects:  # by computed names
            out.append((fid, "", "", f".{attr}"))  # judged by its own evidence, like a call
    out += computed_importers(store, names)
    return out, ungated


def select_readers(
    store: EvidenceReader,
    names: Sequence[str],
    evidence: Mapping[str, Sequence[CoverEdge]],
    selection: Selection,
    origin: str,
    min_confidence: float,
    open_classes: frozenset[str] = frozenset(),
    called_in_evidence: frozenset[str] = frozenset(),
    rebinds: bool = False,
    gate: ReadGate | None = None,
    properties: frozenset[str] = frozenset(),
    compatible_in_evidence: frozenset[str] = frozenset(),
) -> None:
    """Tests of the functions that read ``names``. A module or class body that reads them at
    import time is followed through the names its statement binds (``Y = X * 2`` makes ``Y``
    changed too); a statement that may do more (a call, a registering decorator) selects
    everyone who imports that module.

    With a ``gate`` that applies (the index and the evidence describe one tree), a function
    reads for a test only if that test's recorded lines include a line that makes one of its
    reads; functions in the gate's changed files, reads without lines and edges without lines
    are not gated (see :func:`gated_edges`)."""
    seen: set[str] = set()
    pending = names_closure(store, names)
    rounds = 0
    while pending and rounds < _MAX_NAME_ROUNDS:
        rounds += 1
        seen |= pending
        plain: dict[str, set[str]] = defaultdict(set)
        bodies: dict[str, tuple[str, str, str]] = {}
        props = properties if rounds == 1 else frozenset()
        rows, ungated = _readers(
            store, pending, open_classes, called_in_evidence, props, compatible_in_evidence
        )
        for fid, qualname, dotted, ref in rows:
            if qualname == MODULE_SCOPE or qualname.endswith(f".{CLASS_BODY}"):
                bodies[fid] = (qualname, dotted, ref)
            else:
                plain[fid].add(ref)
        follow, wide = (
            _follow_import_time_reads(store, bodies, pending, rebinds and rounds == 1)
            if bodies
            else (set(), {})
        )
        for fid, ref in wide.items():
            plain[fid].add(ref)
        ungated |= set(wide)
        lines = (
            read_lines_of(store, plain, ungated, gate.changed_files)
            if gate is not None and gate.applies
            else {}
        )
        missing = [f for f in plain if f not in evidence]
        # a gated reader needs each test's edge with its lines; the others, only the tests
        value_gate = gate is not None and gate.applies  # the index and the evidence agree
        by_lines = [f for f in missing if f in lines or (value_gate and only_recorded(plain[f]))]
        extra = store.tests_covering([f for f in missing if f not in by_lines], min_confidence)
        extra += store.covering_tests(by_lines, min_confidence) if by_lines else []
        by_fn: dict[str, list[CoverEdge]] = defaultdict(list)
        for e in extra:
            by_fn[e.function].append(e)
        for fid, refs in plain.items():
            via = f"{fid} reads {', '.join(sorted(refs))}"
            edges = evidence.get(fid, by_fn.get(fid, []))
            for e in gated_edges(edges, refs, lines.get(fid), pending if value_gate else None):
                selection.add(e.test, Reason("reads-changed-name", via, e.confidence))
        select_memo_users(store, plain, selection, min_confidence)
        pending = names_closure(store, follow - seen) - seen
    if pending:
        selection.overrides.append(
            Override(
                OverrideKind.NAME_CHAIN,
                f"names of {origin} flow through more than "
                f"{_MAX_NAME_ROUNDS} import-time bindings; widened to run-all",
            )
        )


@attrs.frozen
class ReadGate:
    """Whether a reader's tests are those that ran the lines of its reads (``applies``: the
    index parsed the tree whose evidence is read, and the diff starts there), and the files
    the change touches, whose readers are never gated."""

    applies: bool
    changed_files: frozenset[str] = frozenset()


def read_lines_of(
    store: EvidenceReader,
    reads: Mapping[str, set[str]],
    ungated: set[str],
    changed_files: frozenset[str],
) -> dict[str, dict[str, frozenset[int]]]:
    """For each reader whose every read in ``reads`` has recorded lines: the lines that make
    each read. Left out (never gated): ``ungated`` readers, readers in ``changed_files`` (their
    index and their evidence may describe different versions of the file), and any reader
    with a read the index keeps no lines for (a name a star import binds, an older index)."""
    wanted = [f for f in reads if f not in ungated and split_id(f)[0] not in changed_files]
    known = store.read_lines(wanted) if wanted else {}
    out: dict[str, dict[str, frozenset[int]]] = {}
    for fid in wanted:
        by_name = known.get(fid, {})
        if all(by_name.get(ref) for ref in reads[fid]):
            out[fid] = {ref: by_name[ref] for ref in reads[fid]}
    return out


def gated_edges(
    edges: Sequence[CoverEdge],
    refs: set[str],
    lines: Mapping[str, frozenset[int]] | None = None,
    names: Collection[str] | None = None,
) -> list[CoverEdge]:
    """The edges of a reader whose test read one of ``names`` through ``refs``. With ``lines``
    (per read, the lines that make it), a test made only the reads whose lines it executed: a
    read on a statement it never ran read nothing for it, so a test that ran only a recorded
    reflective call is judged by what its run gave that call, whatever the reader's other
    statements read. With ``names`` (the index and the evidence describe one tree), reads that
    are all recorded reflective calls count only where the run gave them one of ``names``
    (see :func:`recorded_edges`). Without lines, or for an edge that does not know its lines,
    every read counts."""
    out = []
    for e in edges:
        ran = (
            refs
            if not lines or not e.lines
            else {r for r in refs if not lines[r].isdisjoint(e.lines)}
        )
        if ran and (names is None or recorded_edges([e], ran, names)):
            out.append(e)
    return out


def changed_source_files(cs: ChangeSet) -> list[str]:
    return sorted({f.path for f in cs.files if f.role is FileRole.SOURCE})


def data_files(cs: ChangeSet) -> list[str]:
    paths = set()
    for f in cs.files:
        if f.role is FileRole.DATA:
            paths.add(f.path)
            if f.old_path:
                paths.add(f.old_path)
    return sorted(paths)


def listed_directories(cs: ChangeSet) -> list[str]:
    """Folders ("a/b/") whose listing an added, deleted or renamed file changes: a test that
    lists a folder (fixtures loaded by glob, plug-in modules found by a scan) may see a
    different set of files."""
    dirs: set[str] = set()
    for f in cs.files:
        if f.kind is FileKind.MODIFIED:
            continue
        for path in (f.path, f.old_path):
            parts = (path or "").split("/")[:-1]
            dirs |= {"/".join(parts[:i]) + "/" for i in range(1, len(parts) + 1)}
    return sorted(dirs)


def is_method(region: ChangedRegion) -> bool:
    qual = split_id(region.id)[1]
    parts = qual.split(".")
    return region.region is RegionKind.FUNCTION and len(parts) > 1 and "<locals>" not in parts


def needs_evidence(region: ChangedRegion) -> bool:
    return region.kind is not ChangeKind.ADDED


def new_test_files(cs: ChangeSet) -> list[str]:
    """Test modules the graph cannot know yet: run them as files."""
    return sorted(
        f.path
        for f in cs.files
        if f.collects and f.kind is not FileKind.DELETED and f.kind is not FileKind.MODIFIED
    )


def every_test(
    cs: ChangeSet, known: Sequence[str], extra_files: Sequence[str] = ()
) -> tuple[str, ...]:
    """Every test of the suite for a run-all: the known tests, with the tests of changed test
    modules (and of ``extra_files``) replaced by their file, so new tests in them run, and
    deleted modules left out."""
    gone = {
        p
        for f in cs.files
        if f.collects or f.kind is FileKind.DELETED
        for p in (f.path, f.old_path)
        if p
    } | set(extra_files)
    files = {f.path for f in cs.files if f.collects and f.kind is not FileKind.DELETED}
    files |= set(extra_files)
    kept = {t for t in known if split_id(t)[0] not in gone}
    return tuple(sorted(kept | files))
