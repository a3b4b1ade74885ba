"""Frozen value objects of the domain: ids, change sets, evidence, trust and decisions."""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from typing import Any

import attrs

from guard_core.bases import BaseChoice

MODULE_SCOPE = "<module>"
"""Last qualname part of the pseudo-function that stands for a module's top-level code."""
CLASS_BODY = "<body>"
"""Last qualname part of the pseudo-function that stands for a class body."""


def node_id(path: str, qualname: str) -> str:
    """Id of a function or test: ``path/relative/to/root.py::Qual.name``."""
    return f"{path}::{qualname}"


def split_id(ident: str) -> tuple[str, str]:
    """Split an id into ``(path, qualname)``; the qualname is empty for a bare path."""
    path, sep, qual = ident.partition("::")
    return (path, qual) if sep else (ident, "")


def test_function_id(nodeid: str) -> str:
    """Parametrisations collapse into one Test: ``t.py::test_x[1]`` -> ``t.py::test_x``."""
    path, qual = split_id(nodeid)
    if "[" in qual:
        qual = qual[: qual.index("[")]
    return f"{path}::{qual}" if qual else path


def _non_empty(_inst: object, attribute: attrs.Attribute[Any], value: str) -> None:
    if not value:
        raise ValueError(f"{attribute.name} must not be empty")


def unit_interval(_inst: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{attribute.name} must be within [0, 1], got {value!r}")


class Level(str, enum.Enum):
    """How wide a selection is; later members are wider (more conservative)."""

    SUBSET = "subset"
    MEDIUM = "medium"
    RUN_ALL = "run-all"

    @property
    def rank(self) -> int:
        return list(Level).index(self)


class ChangeKind(str, enum.Enum):
    """What happened to a function or region between the two sides of a diff."""

    MODIFIED = "modified"
    ADDED = "added"
    DELETED = "deleted"
    RENAMED = "renamed"


class RegionKind(str, enum.Enum):
    """The kind of code a changed id stands for."""

    FUNCTION = "function"
    CLASS_BODY = "class_body"
    MODULE = "module"


class FileKind(str, enum.Enum):
    """How a file took part in a diff."""

    MODIFIED = "modified"
    ADDED = "added"
    DELETED = "deleted"
    RENAMED = "renamed"


class FileRole(str, enum.Enum):
    """What a changed file is to Guard; decides which rule handles it."""

    SOURCE = "source"  # Python code under test
    TEST = "test"  # a pytest test module
    CONFTEST = "conftest"
    ENVIRONMENT = "environment"  # packaging, pytest or dependency configuration
    DATA = "data"  # any other file (templates, JSON, static files)


@attrs.frozen
class ChangedFile:
    """One file of the diff."""

    path: str = attrs.field(validator=_non_empty)
    kind: FileKind
    role: FileRole
    old_path: str | None = None
    binary: bool = False
    collects: bool = False  # a test module pytest collects: its path is a node id to run
    # what the new version imports by name (``m.n``, ``m.*``); None: not worked out
    imports_after: frozenset[str] | None = None
    # whether ``from <this module> import *`` may fail now: its ``__all__`` names something
    # the module no longer binds, or cannot be read (True where not worked out)
    star_breaks: bool = True


@attrs.frozen
class Hunk:
    """A changed stretch of a function body, in the base side's line numbers.

    ``start``..``end`` (end exclusive) are the base lines replaced; for a pure insertion
    ``start == end`` is the line just after the insertion point. ``opens_paths``: the new text
    may run on paths that did not run the old lines (it dedents out of their block, adds a
    clause such as ``else``/``except``, or inserts code)."""

    start: int
    end: int
    opens_paths: bool = True


@attrs.frozen
class ChangedRegion:
    """A function, class body or module body whose code differs between the two sides.

    ``body_changed``: code that runs when the function is called changed.
    ``definition_changed``: code that runs when the ``def``/``class`` statement runs changed
    (decorators, signature defaults, docstring, bases, or top-level statements).
    ``names``: dotted names (``pkg.mod.NAME``, ``pkg.mod.Cls.attr``) whose binding changed.
    ``side_effects``: the changed definition-time code may do more than bind ``names`` (calls,
    imports of other modules, decorators that may register), so readers of ``names`` are not
    enough to find the affected tests.
    ``removed``: names that the old side bound and the new side does not: any module that
    imports them by name now fails to import.
    """

    id: str = attrs.field(validator=_non_empty)
    file: str = attrs.field(validator=_non_empty)
    kind: ChangeKind
    region: RegionKind = RegionKind.FUNCTION
    old_id: str | None = None
    dynamic_dispatch: bool = False
    body_changed: bool = True
    definition_changed: bool = False
    names: tuple[str, ...] = ()
    side_effects: bool = False
    removed: tuple[str, ...] = ()  # dotted names that no longer exist after the change
    hunks: tuple[Hunk, ...] = ()  # where a modified body changed; () when unknown
    test_id: str | None = None  # the pytest node id, when the region is a test function
    # the dotted name of the class whose body or method this is, and whether that class
    # derives from code outside the repository (which may read any of its attributes)
    owner_class: str | None = None
    open_class: bool = False
    docstring_only: bool = False  # only a function's docstring changed: no call runs it
    # its decorators changed: the name may bind another kind of object (a property, a plain
    # function), so import-time code that reads it (``@name.setter``) may fail
    rebinds: bool = False
    memo: bool = False  # a function that serves results it stored earlier (``Region.memo``)
    # a plain def (no generator) whose decorators, before and after, all call through: a call
    # of it that returns has run its body, so its callers are in its evidence
    calls_through: bool = False
    # the old side was a plain ``@property``: every read through an instance ran its getter,
    # so those readers are in its evidence (a read through the class is the class's holders')
    was_property: bool = False
    doc_changed: bool = False  # its docstring changed (a doctest may live there)
    registers: bool = False  # a class whose decorators may register it, not only wrap or mark


@attrs.frozen
class IntegrityFlag:
    """A test-file edit a human should look at: tests removed, skip/xfail added, assertions
    weakened. It does not shrink the selection (test edits run the whole suite anyway)."""

    file: str
    kind: str  # tests-removed | skip-added | assertions-weakened
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"file": self.file, "kind": self.kind, "detail": self.detail}


@attrs.frozen
class Dependent:
    """Unchanged code whose behaviour a change can alter all the same: code that names a module
    which appeared (``try: import pkg.extra``, ``import_module("pkg.extra")``) or a folder whose
    listing changed. Its covering tests are selected."""

    id: str
    via: str


@attrs.frozen
class ChangeSet:
    """Everything a diff changed, as the slicer sees it.

    ``problems`` are reasons the slicer could not see the change fully (unparsable file,
    binary file, unreadable diff, unclaimed hunk); any problem makes the decision run-all.
    ``hazards``: changes whose reach cannot be bounded (a new module that shadows an
    importable name); each makes the decision run-all too.
    """

    base: str
    files: tuple[ChangedFile, ...] = ()
    regions: tuple[ChangedRegion, ...] = ()
    problems: tuple[str, ...] = ()
    integrity: tuple[IntegrityFlag, ...] = ()
    hazards: tuple[str, ...] = ()
    dependents: tuple[Dependent, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.files and not self.regions and not self.problems and not self.hazards


@attrs.frozen
class CoverEdge:
    """A ``COVERED_BY`` edge: ``test`` executed ``function``."""

    function: str
    test: str
    source: str = "coverage"
    confidence: float = attrs.field(default=1.0, validator=unit_interval)
    evidence_count: int = 1
    last_verified_sha: str | None = None
    lines: frozenset[int] = frozenset()  # the function's lines it executed; empty: unknown
    # reached only through set-up every test shares (start-up, a module's first import), not
    # by anything the test itself did: evidence for the edge, not a tie to the module
    shared: bool = False
    # what the function's recorded reflective calls were given for this test: ".name" for an
    # attribute looked up by a computed name, "=module.qualname" for an object whose signature
    # was introspected ("=?" one without a name); None: not recorded
    names: frozenset[str] | None = None


@attrs.frozen
class Reason:
    """Why one test was selected: the rule and the function, file or edge behind it."""

    rule: str
    via: str
    confidence: float | None = None

    @property
    def text(self) -> str:
        """For people: ``covers pkg/mod.py::f``."""
        return f"{self.rule} {self.via}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule, "via": self.via}
        if self.confidence is not None:
            out["confidence"] = round(self.confidence, 4)
        return out


class OverrideKind(str, enum.Enum):
    """The overrides Guard's own rules fire; plug-ins may use other kinds (which never force
    run-all by themselves: their vote's level does)."""

    # run-all: the evidence cannot be trusted for this change
    TEST_FILES = "test_files"  # test code changed (the seed's policy only)
    ENVIRONMENT = "environment"  # interpreter, packages or environment files changed
    NO_EVIDENCE = "no_evidence"  # a changed id no test was seen to run
    UNREADABLE_CHANGE = "unreadable_change"  # a change the slicer could not parse or map
    STALE_GRAPH = "stale_graph"  # no complete ingest, or its commit is not in this clone
    STORE = "store"  # the graph cannot be reached
    INTERNAL_ERROR = "internal_error"  # the decision itself failed
    POLICY_ERROR = "policy_error"  # a trust policy or vote plug-in failed
    SHADOWING = "shadowing"  # a new module or name may shadow another at import
    NAME_CHAIN = "name_chain"  # a name flows through too many import-time bindings
    # widening: the selection grows, the level stands
    DYNAMIC_WIDENING = "dynamic_widening"  # dynamic dispatch with incomplete evidence

    @property
    def forces_run_all(self) -> bool:
        return self is not OverrideKind.DYNAMIC_WIDENING


def _override_kind(value: str) -> OverrideKind | str:
    try:
        return OverrideKind(value)
    except ValueError:
        return str(value)


@attrs.frozen
class Override:
    """A hard override or widening that fired, with the detail a human needs."""

    kind: OverrideKind | str = attrs.field(converter=_override_kind)
    detail: str

    @property
    def kind_name(self) -> str:
        return self.kind.value if isinstance(self.kind, OverrideKind) else self.kind

    @property
    def forces_run_all(self) -> bool:
        return isinstance(self.kind, OverrideKind) and self.kind.forces_run_all


@attrs.frozen
class TrustComponents:
    """The three terms of the trust formula."""

    evidence_ratio: float = attrs.field(validator=unit_interval)
    freshness: float = attrs.field(validator=unit_interval)
    uncertain_ratio: float = attrs.field(validator=unit_interval)

    @property
    def trust(self) -> float:
        return 0.5 * self.evidence_ratio + 0.3 * self.freshness + 0.2 * (1 - self.uncertain_ratio)


@attrs.frozen
class GraphStats:
    """Node and edge counts of one repository's graph."""

    files: int = 0
    functions: int = 0
    tests: int = 0
    runs: int = 0
    calls: int = 0
    imports: int = 0
    covered_by: int = 0
    failed_in: int = 0

    def as_dict(self) -> dict[str, int]:
        return attrs.asdict(self)


def _id_set(value: object) -> frozenset[str] | None:
    if isinstance(value, str):  # stored as JSON: a list property cannot be empty everywhere
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return frozenset(str(v) for v in value) if isinstance(value, list) else None


@attrs.frozen
class IngestInfo:
    """What the graph knows about its own provenance (kept in the schema node)."""

    static_sha: str | None = None
    coverage_sha: str | None = None
    coverage_complete: bool = False
    coverage_runs: int = 0
    environment: str | None = None  # fingerprint of interpreter + installed packages
    python: str | None = None  # the interpreter the evidence was collected with
    # tests that already failed where the evidence was collected: node id -> failure signature
    known_failures: Mapping[str, str] = attrs.field(factory=dict, hash=False)
    # earlier evidence bases the current one was refreshed from: edges verified at any of them
    # were carried over through the diffs, so they are as fresh as the base itself
    lineage: tuple[str, ...] = ()
    # ids that start-up, plugins or conftest imports ran (``<session>``): their shared edges
    # are not import-time code a fresh import reproduces; None: not recorded
    session_ran: frozenset[str] | None = attrs.field(default=None, hash=False)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> IngestInfo:
        try:
            known = json.loads(data.get("known_failures") or "{}")
        except (TypeError, ValueError):
            known = {}
        lineage = data.get("lineage") or []
        return cls(
            static_sha=data.get("static_sha") or None,
            coverage_sha=data.get("coverage_sha") or None,
            coverage_complete=bool(data.get("coverage_complete", False)),
            coverage_runs=int(data.get("coverage_runs") or 0),
            environment=data.get("environment") or None,
            python=data.get("python") or None,
            known_failures=known if isinstance(known, dict) else {},
            lineage=tuple(str(sha) for sha in lineage) if isinstance(lineage, list) else (),
            session_ran=_id_set(data.get("session_ran")),
        )

    def fresh_shas(self, base: str) -> frozenset[str]:
        """The commits at which verified evidence holds at ``base``: the base itself, and the
        bases it was refreshed from when ``base`` is the current evidence base."""
        if base == self.coverage_sha:
            return frozenset({base, *self.lineage})
        return frozenset({base})


def failure_signature(message: str) -> str:
    """What a failure says, without the line numbers around it: pytest's ``E`` lines (the
    exception and the assertion's explanation), else the last line."""
    lines = [line.strip() for line in message.splitlines()]
    explained = [line for line in lines if line.startswith("E ")]
    if explained:
        return "\n".join(explained)
    return next((line for line in reversed(lines) if line), "")


@attrs.frozen
class Decision:
    """The answer to "which tests must run": level, trust, and a reason per selected test."""

    level: Level
    trust: float
    components: TrustComponents
    tests: tuple[str, ...]
    reasons: Mapping[str, tuple[Reason, ...]]
    total_tests: int
    overrides: tuple[Override, ...] = ()
    change_set: ChangeSet = attrs.field(factory=lambda: ChangeSet(base="HEAD"))
    skipped_summary: str = ""
    elapsed_ms: float = 0.0
    # run-all whose test list cannot be known (no graph, partial evidence): ``tests`` is then
    # what the graph knows, and the JSON's ``tests`` is null, meaning "the whole suite"
    whole_suite: bool = False
    # with evidence kept per commit: the base this check read, and why that one
    evidence: BaseChoice | None = None

    SCHEMA = "guard.decision/1"

    def to_json(self) -> dict[str, Any]:
        """The stable ``guard.decision/1`` object."""
        cs = self.change_set
        return {
            "schema": self.SCHEMA,
            "level": self.level.value,
            "trust": round(self.trust, 4),
            "components": {
                "evidence_ratio": round(self.components.evidence_ratio, 4),
                "freshness": round(self.components.freshness, 4),
                "uncertain_ratio": round(self.components.uncertain_ratio, 4),
            },
            "overrides": [{"kind": o.kind_name, "detail": o.detail} for o in self.overrides],
            "changed": {
                "base": cs.base,
                "files": [
                    {"path": f.path, "kind": f.kind.value, "role": f.role.value}
                    | ({"old_path": f.old_path} if f.old_path else {})
                    for f in cs.files
                ],
                "functions": [
                    {"id": r.id, "kind": r.kind.value, "region": r.region.value}
                    | ({"old_id": r.old_id} if r.old_id else {})
                    | ({"dynamic_dispatch": True} if r.dynamic_dispatch else {})
                    for r in cs.regions
                ],
                "problems": list(cs.problems),
            },
            "integrity": [flag.to_json() for flag in cs.integrity],
            "tests": None if self.whole_suite else list(self.tests),
            "reasons": {t: [r.to_json() for r in self.reasons.get(t, ())] for t in self.tests},
            "skipped": self.skipped_summary,
            "total_tests": self.total_tests,
            "elapsed_ms": round(self.elapsed_ms, 2),
            "evidence_base": (
                None
                if self.evidence is None
                else {"sha": self.evidence.sha or None, "reason": self.evidence.reason}
            ),
        }


@attrs.frozen
class TestOutcome:
    """The result of one test in a run."""

    __test__ = False  # not a pytest test class

    test: str
    outcome: str  # passed | failed | error | skipped
    duration_ms: float = 0.0
    message: str = ""


@attrs.frozen
class RunRecord:
    """One recorded test run (a ``Run`` node)."""

    id: str
    timestamp: float
    commit_sha: str
    duration_ms: float
    outcomes: tuple[TestOutcome, ...] = ()

    @property
    def passed(self) -> int:
        return sum(o.outcome == "passed" for o in self.outcomes)

    @property
    def failed(self) -> int:
        return sum(o.outcome in ("failed", "error") for o in self.outcomes)
