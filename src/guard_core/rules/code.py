"""Rules for changed code: the tests that ran it, the readers of the names it changes, the
importers of names it removed, and what pytest's own reading of test code adds."""

from __future__ import annotations

from guard_core.lines import observers
from guard_core.model import (
    CLASS_BODY,
    ChangedRegion,
    ChangeKind,
    FileRole,
    Reason,
    RegionKind,
    split_id,
)
from guard_core.ports import EvidenceReader
from guard_core.rules.base import Rule, RuleInput
from guard_core.selection import (
    Selection,
    is_method,
    judged_id,
    member_tail,
    module_region,
    names_closure,
    select_readers,
)
from guard_core.test_code import test_code_reasons

IMPORT_TIME = "import-time-code"
ENCLOSING = "runs-enclosing-function"
_MAX_SUBCLASS_ROUNDS = 20


def select_importers(
    store: EvidenceReader, path: str, selection: Selection, rule: str, via: str, floor: float
) -> None:
    """Every test whose evidence imports ``path`` (ran its module body)."""
    for e in store.covering_tests([module_region(path)], floor, lines=False):
        selection.add(e.test, Reason(rule, via, e.confidence))


def changed_regions(data: RuleInput, selection: Selection) -> None:
    for region in data.change.regions:
        if region.region is RegionKind.FUNCTION:
            _changed_function(data, region, selection)
        else:
            _changed_body(data, region, selection)


def _importers(data: RuleInput, region: ChangedRegion, selection: Selection) -> None:
    """The tests that ran the region's definition: every importer of its module, or, for a
    class defined inside a function, the tests that ran that function (its body runs there,
    not at import, as the function's own code). A class a decorator may register, or a
    function (its definition changes only through decorators), keeps the importers: the
    registry may be read by tests that never ran the function."""
    nested = region.region is RegionKind.CLASS_BODY and not region.registers
    enclosing = _enclosing_function(region.id)
    if data.refined and nested and enclosing:
        renamed = {r.id: judged_id(r) for r in data.change.regions}
        ran = data.store.covering_tests([renamed.get(enclosing, enclosing)], data.floor, False)
        if ran:  # none: never run, or not measured; the importers are the safe side
            selection.add_edges(ran, ENCLOSING)
            return
    # a definition inside a function runs when the function does, which no import replays
    store = (data.with_import_edges if enclosing else None) or data.store
    select_importers(store, region.file, selection, IMPORT_TIME, region.id, data.floor)


def _enclosing_function(region_id: str) -> str | None:
    """``f.<locals>.C.<body>`` -> ``f``: the innermost function a definition is nested in."""
    path, _, qualname = region_id.partition("::")
    outer, nested, _ = qualname.rpartition(".<locals>.")
    return f"{path}::{outer}" if nested else None


def _changed_function(data: RuleInput, region: ChangedRegion, selection: Selection) -> None:
    own = data.evidence.get(judged_id(region), [])
    refined = data.refined
    if region.kind is ChangeKind.ADDED:
        if refined and is_method(region):  # may override a base-class method
            name = region.id.rsplit(".", 1)[-1].split("#")[0]
            others = [f for f in data.store.functions_named(name) if f != region.id]
            for e in data.store.covering_tests(others, data.floor, lines=False):
                selection.add(e.test, Reason("same-name-method", e.function, e.confidence))
        if region.side_effects:
            _importers(data, region, selection)
        return
    # a memo function's stored results were computed by lines its readers never ran
    localised = (
        data.lines_apply and region.hunks and not region.definition_changed and not region.memo
    )
    same_code = region.docstring_only or (  # a docstring runs in no call; a rename
        region.kind is ChangeKind.RENAMED
        and not region.body_changed  # runs the same
        and not region.side_effects
    )
    covered = not (refined and same_code)
    if covered:
        selection.add_edges(observers(own, region.hunks) if localised else own, "covers")
    if region.definition_changed and refined and region.names:
        # its callers are in its evidence when all of it is selected
        calls_seen = (
            frozenset(map(member_tail, region.names))
            if covered and own and not localised and region.calls_through
            else frozenset()
        )
        # a property's getter ran for every read through an instance: those are in its edges
        properties = (
            frozenset(map(member_tail, region.names))
            if covered and own and region.was_property
            else None
        )
        select_readers(
            data.store,
            region.names,
            data.evidence,
            selection,
            region.id,
            data.floor,
            data.open_classes,
            calls_seen,
            region.rebinds,
            data.gate,
            properties or frozenset(),
        )
    if region.side_effects or (region.definition_changed and not refined):
        _importers(data, region, selection)


def _changed_body(data: RuleInput, region: ChangedRegion, selection: Selection) -> None:
    """A module or class body: its import-time evidence, or the readers of what it binds."""
    if region.kind is ChangeKind.ADDED and not region.side_effects:
        return  # a new module or class: only changed code can reach it
    own = data.evidence.get(judged_id(region), [])
    if not data.refined or region.side_effects or not region.names:
        selection.add_edges(own, IMPORT_TIME)
        if region.kind is ChangeKind.ADDED or not own:
            _importers(data, region, selection)
        return
    select_readers(
        data.store,
        region.names,
        data.evidence,
        selection,
        region.id,
        data.floor,
        data.open_classes,
        gate=data.gate,
    )


def changed_test_code(data: RuleInput, selection: Selection) -> None:
    cs = data.change
    if not any(f.role in (FileRole.TEST, FileRole.CONFTEST) for f in cs.files):
        return
    files = {f.path: f for f in cs.files}
    for test, reason in test_code_reasons(cs.regions, files, data.store.all_tests()):
        selection.add(test, reason)
    # a conftest's collector (``pytest.File.collect``, an item's ``runtest``) ran for tests
    # of files that are no Python modules: those files run whole, for the items it may add
    conftest = {f.path for f in cs.files if f.role is FileRole.CONFTEST}
    for region in (r for r in cs.regions if r.file in conftest):
        for e in data.evidence.get(judged_id(region), ()):
            path = split_id(e.test)[0]
            if path and not path.endswith(".py"):
                selection.add(path, Reason("conftest-code", region.id, e.confidence))


def inherited_tests(data: RuleInput, selection: Selection) -> None:
    """A test method added to a class (a base class, a mixin) is a new test of every test
    class that inherits it, which no index lists: the test modules that hold a class
    deriving from it (through any number of modules), import its module or ran its code,
    run whole."""
    known = {split_id(t)[0] for t in data.store.all_tests() if "." not in split_id(t)[1]}
    methods = {
        f"{r.owner_class}.{split_id(r.id)[1].rsplit('.', 1)[-1]}"
        for r in data.change.regions
        if r.region is RegionKind.FUNCTION and r.owner_class
    }
    test_code = {f.path for f in data.change.files if f.role is not FileRole.SOURCE}
    for region in data.change.regions:
        if not _adds_a_test(region, methods, region.file in test_code):
            continue
        users = data.store.tests_of_files([region.file]).get(region.file, [])
        files = {split_id(t)[0] for t in users} - {region.file}
        subclasses = _subclass_files(data.store, region.owner_class) if region.owner_class else None
        files |= known if subclasses is None else subclasses
        for path in sorted(files & known):
            selection.add(path, Reason("inherited-test", region.id))


def _adds_a_test(region: ChangedRegion, methods: set[str], test_code: bool) -> bool:
    """A new or renamed ``test*`` method, or in test code a class body binding a ``test*``
    attribute other than a changed method of ``methods`` (``test_x = check``): what pytest
    collects as a test of every inheriting test class. (A source class's ``test_client_class
    = None`` is no test: pytest collects only what it can call.)"""
    if region.region is RegionKind.FUNCTION:
        name = split_id(region.id)[1].rsplit(".", 1)[-1]
        added = region.kind in (ChangeKind.ADDED, ChangeKind.RENAMED)
        return added and is_method(region) and name.startswith("test")
    return (
        test_code
        and region.region is RegionKind.CLASS_BODY
        and region.kind is not ChangeKind.DELETED
        and any(
            owner == region.owner_class and attribute.startswith("test") and n not in methods
            for n in region.names
            for owner, _, attribute in [n.rpartition(".")]
        )
    )


def _subclass_files(store: EvidenceReader, cls: str) -> set[str] | None:
    """The files of the code that names ``cls`` or a class naming it in its header (a
    subclass), transitively through re-exports; None when the chain does not end."""
    found = {cls}
    frontier = {cls}
    files: set[str] = set()
    for _ in range(_MAX_SUBCLASS_ROUNDS):
        if not frontier:
            return files
        rows = store.readers_of(names_closure(store, frontier))
        frontier = set()
        for fid, qualname, dotted, _ in rows:
            files.add(split_id(fid)[0])
            if qualname.endswith(f".{CLASS_BODY}") and dotted:
                frontier.add(dotted.rsplit(".", 1)[0])
        frontier -= found
        found |= frontier
    return None if frontier else files


def removed_names(data: RuleInput, selection: Selection) -> None:
    """``from m import gone`` now fails at import time: the importers of a removed name."""
    cs = data.change
    store = data.store
    removed = sorted({n for r in cs.regions for n in r.removed})
    if not removed:
        return
    # `from pkg import gone` where pkg re-exports it (through `import *` too)
    exported = sorted(names_closure(store, removed))
    missing = {*exported, *(f"{n.rpartition('.')[0]}.*" for n in exported)}
    after = {f.path: f.imports_after for f in cs.files}
    # `from m import *` binds what m has, unless its __all__ names what it lost (a module
    # that re-exports it may list it in an __all__ of its own: unknown)
    losing = {r.file for r in cs.regions if r.removed}
    stars_fail = any(f.star_breaks for f in cs.files if f.path in losing)
    by_name = set(store.importers_of(exported, stars=False))
    of_losers = set(store.importers_of(removed))
    via = ", ".join(removed)
    for path in store.importers_of(exported):
        if path not in by_name and path in of_losers and not stars_fail:
            continue  # only a star import: the readers of the names it bound speak
        if (now := after.get(path)) is not None and not now & missing:
            continue  # changed too, and no longer imports it: its own regions speak
        select_importers(
            store, path, selection, "imports-removed-name", f"{path} imports {via}", data.floor
        )


CODE_RULES = (
    Rule("changed-code", changed_regions, refinement=False),
    Rule("test-code", changed_test_code),
    Rule("removed-names", removed_names),
    Rule("inherited-test", inherited_tests),
)
