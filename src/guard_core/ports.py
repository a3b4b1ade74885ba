"""The ports: what the domain needs from the outside world, as typing.Protocol interfaces.

Adapters implement them; ``guard_core.testing`` has small in-memory fakes for unit tests.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import attrs

from guard_core.index_model import BodyStatements, FileIndex
from guard_core.model import (
    ChangeSet,
    CoverEdge,
    Decision,
    GraphStats,
    IngestInfo,
    Level,
    Override,
    RunRecord,
    TrustComponents,
)

if TYPE_CHECKING:
    from guard_core.bases import EvidenceBase
    from guard_core.evidence import RunEvidence


@attrs.frozen
class FunctionFacts:
    """What the graph knows about one function id."""

    id: str
    file: str
    no_evidence: bool
    has_dynamic_dispatch: bool
    memo: bool = False


@attrs.frozen
class Caller:
    """A function reached by walking ``CALLS`` edges backwards."""

    id: str
    hops: int
    confidence: float


class EvidenceReader(Protocol):
    """What a decision reads from the graph: the evidence of changed ids and the static facts
    the selection rules follow."""

    def ingest_info(self) -> IngestInfo: ...
    def covering_tests(
        self, function_ids: Iterable[str], min_confidence: float = 0.0, lines: bool = True
    ) -> list[CoverEdge]: ...
    def tests_covering(
        self, function_ids: Iterable[str], min_confidence: float = 0.0, per_test: int = 3
    ) -> list[CoverEdge]: ...
    def function_facts(self, ids: Iterable[str]) -> dict[str, FunctionFacts]: ...
    def tests_of_files(self, paths: Iterable[str]) -> dict[str, list[str]]: ...
    def functions_of_files(self, paths: Iterable[str]) -> dict[str, list[str]]: ...
    def all_tests(self) -> list[str]: ...
    def test_count(self) -> int: ...
    def all_functions(self) -> list[str]: ...
    def spawning_tests(self) -> list[str]: ...
    def doctest_items(self) -> list[str]: ...
    def imported_files(self) -> list[str]: ...
    def modules_among(self, names: Iterable[str]) -> set[str]: ...
    def modules_imported(self, modules: Iterable[str]) -> set[str]:
        """Which of ``modules`` another file imports by that dotted name (``import m``,
        ``from m import x``, ``from pkg import m``)."""
        ...

    def classes_among(self, names: Iterable[str]) -> set[str]: ...
    def functions_among(self, names: Iterable[str]) -> set[str]: ...
    def attribute_readers(self, names: Iterable[str]) -> list[tuple[str, str]] | None:
        """Functions reading any of the attribute ``names`` on any object, or attributes by
        computed names (``*``); None when the index does not record attribute reads."""

    def aliases_of(self, names: Iterable[str]) -> dict[str, list[str]]: ...
    def importers_of(self, names: Iterable[str], stars: bool = True) -> list[str]:
        """Files that import any of ``names`` by name; with ``stars``, or by ``*``."""
        ...

    def readers_of(self, names: Iterable[str]) -> list[tuple[str, str, str, str]]: ...
    def functions_named(self, name: str) -> list[str]: ...
    def statement_bindings(self, ids: Iterable[str]) -> dict[str, BodyStatements]: ...
    def read_lines(self, ids: Iterable[str]) -> dict[str, dict[str, frozenset[int]]]:
        """For functions: each name read (a ``readers_of`` ref, ".name" for an attribute)
        with the lines that read it; what has no lines is left out."""
        ...

    def callers(self, function_id: str, hops: int, min_confidence: float) -> list[Caller]: ...
    def memo_callers(self, function_ids: Iterable[str], hops: int) -> dict[str, str]:
        """Functions flagged ``memo`` that reach any of ``function_ids`` through at most
        ``hops`` ``CALLS`` edges: ``{memo function: the id it reaches}``."""
        ...

    def repair_tests_of_callees(
        self, function_ids: Iterable[str], hops: int = 3
    ) -> list[CoverEdge]: ...


class IndexWriter(Protocol):
    """What the static ingest writes: each file's functions, tests, calls and imports."""

    def file_hashes(self) -> dict[str, str]: ...
    def write_files(self, files: Sequence[FileIndex]) -> None: ...
    def remove_files(self, paths: Iterable[str]) -> None: ...
    def keep_tests(self, ids: Iterable[str]) -> None:
        """Tests no index lists any more that pytest still collects (a method moved to a base
        class, a test built by a call): from now on the evidence's own, which no later index of
        their file drops. Unknown ids are ignored."""

    def update_ingest_info(self, **fields: object) -> None:
        """Record ingest facts (the index records ``static_sha``, the commit it parsed)."""


class EvidenceWriter(Protocol):
    """What the coverage ingest, the refresh and ``feedback`` write."""

    def ingest_info(self) -> IngestInfo: ...
    def update_ingest_info(self, **fields: object) -> None: ...
    def write_coverage(
        self, edges: Iterable[CoverEdge], *, sha: str, tests: Iterable[str], replace: bool
    ) -> None: ...
    def set_flake_rates(self, rates: dict[str, float]) -> None: ...
    def set_test_kinds(self, kinds: dict[str, tuple[bool, bool]]) -> None:
        """Per test: (starts Python child processes whose code the collector cannot see,
        is a doctest item)."""

    def record_run(self, run: RunRecord) -> None: ...
    def mark_shard(self, sha: str, shard: int, shards: int, tests: int = 1) -> bool:
        """Record ``shard`` of ``shards`` done at ``sha`` (having run ``tests``) and, in the
        same atomic step, whether the evidence of ``sha`` is complete: every shard in and
        some test run among them; True once it is."""
        ...

    def set_edge_lines(self, edges: Iterable[CoverEdge]) -> None: ...
    def restamp_edges(self, old_shas: Sequence[str], new_sha: str) -> None: ...
    def mark_unproven(self, function_ids: Iterable[str]) -> None: ...
    def clear_unproven(self) -> None: ...
    def add_repair_edge(self, function_id: str, test_id: str, sha: str) -> None: ...


@runtime_checkable
class GraphStore(EvidenceReader, IndexWriter, EvidenceWriter, Protocol):
    """Persistence of the code graph of one repository: the three narrow ports, plus the
    graph's own lifecycle."""

    def ensure_schema(self) -> None: ...
    def stats(self) -> GraphStats: ...
    def clear(self) -> None: ...
    def close(self) -> None: ...


@runtime_checkable
class EvidenceBases(Protocol):
    """A store that keeps the evidence of several base commits, each as its own graph."""

    def evidence_bases(self) -> list[EvidenceBase]:
        """The commits with evidence, complete or still being written."""
        ...

    def at_base(self, sha: str) -> GraphStore | None:
        """The graph of ``sha``, leased so retention keeps it while a check reads it; None
        when it is being pruned."""
        ...

    def writer_for(self, sha: str) -> GraphStore:
        """The graph the ingest of ``sha`` writes (created on first use)."""
        ...

    def carry_repairs(self, into: GraphStore, sha: str) -> int:
        """Copy the repaired misses (``guard feedback``) of the other bases into ``into``."""
        ...

    def prune_bases(self, protect: Iterable[str] = ()) -> list[str]:
        """Let go of the bases past the retention setting, except those in ``protect`` and
        those a check read moments ago; the commits dropped."""
        ...


@runtime_checkable
class ForksBases(Protocol):
    """Evidence kept per commit that a refresh can move forward: a copy of one base becomes
    the next (``guard run`` in a worktree, without touching the base others read)."""

    def fork_base(self, base: str, sha: str) -> GraphStore | None:
        """A copy of the graph of ``base`` as the graph of ``sha``, for a refresh to update;
        None when ``sha`` has evidence already or ``base`` is gone."""
        ...


@runtime_checkable
class Slicer(Protocol):
    """Turns the diff of a working tree (against HEAD or ``base``) into a change set."""

    def slice(self, repo: Path, base: str | None = None) -> ChangeSet: ...


@attrs.frozen
class Vote:
    """A trust policy's verdict on a change: the level it wants and why."""

    level: Level
    trust: float
    components: TrustComponents
    overrides: tuple[Override, ...] = ()
    policy: str = "default"


@attrs.frozen
class PolicyInput:
    """What a trust policy sees: the change, and the evidence the graph holds for it."""

    change_set: ChangeSet
    evidence: Mapping[str, Sequence[CoverEdge]]  # changed function id -> its covering edges
    facts: Mapping[str, FunctionFacts]  # changed function id -> what the graph knows
    unexercised: frozenset[str]  # ids a complete, fresh ingest saw no test execute
    head_sha: str
    ingest: IngestInfo
    seed_policy: bool = False
    use_confidence: bool = True
    widening: bool = True
    subset_threshold: float = 0.8
    medium_threshold: float = 0.5
    environment_changed: str | None = None  # why the environment differs since the ingest
    # the safety rules' overrides (safety.hard_overrides), computed once by the engine
    hard: tuple[Override, ...] | None = None


class TrustPolicy(Protocol):
    """Votes on the level of a change; the most conservative vote wins."""

    name: str

    def vote(self, data: PolicyInput) -> Vote: ...


@attrs.frozen
class RunResult:
    """What a runner reports: exit status and per-test outcomes; and, when it knows them, the
    files pytest collected and the ids it deselected (which tell a test gone from its file
    from one the run left out)."""

    exit_code: int
    record: RunRecord
    collected: frozenset[str] = frozenset()
    deselected: frozenset[str] = frozenset()


class Runner(Protocol):
    """Runs a set of pytest node ids (or the whole suite when ``tests`` is None).

    ``measures``: the runner can record what each test executes, in the collector's format,
    into ``collect_to`` (what lets ``guard run`` refresh the evidence); a runner that cannot
    says False and ignores ``collect_to``."""

    measures: bool

    def run(
        self,
        repo: Path,
        tests: Sequence[str] | None,
        *,
        stream: bool = True,
        timeout: float | None = None,
        collect_to: Path | None = None,
    ) -> RunResult:
        """``stream``: show pytest's output live; past ``timeout`` seconds raise
        :class:`~guard_core.errors.RunTimedOut`."""
        ...


REFRESHED = "evidence refreshed"  # how :meth:`EvidenceRefresher.finish` says it wrote


@attrs.frozen
class ImportState:
    """What importing the repository's modules builds, the base's code against the working
    tree's: the dotted names whose value differs (``pkg.mod.NAME``, ``pkg.mod.Class.attr``).
    ``changed`` is None when the comparison cannot be trusted, and ``detail`` says why."""

    changed: frozenset[str] | None
    detail: str = ""
    # ``path::qualname`` of the repository code that ran while the base's modules were
    # imported (a class body by its class's name), and the lines per path; None: not known
    ran: frozenset[str] | None = None
    lines: Mapping[str, frozenset[int]] = attrs.field(factory=dict, hash=False)


class ImportProbe(Protocol):
    """Imports the repository's modules as the change's base had them and as they are now, in
    the interpreter that runs the tests, and compares what the imports built."""

    def compare(self, change: ChangeSet, files: Sequence[str]) -> ImportState:
        """The state of importing ``files`` (repository paths) before and after ``change``."""
        ...


class EvidenceRefresher(Protocol):
    """Re-measures the tests ``guard run`` runs and, when they all pass, moves the evidence
    base to the tree they ran on, so the next decision diffs against that tree."""

    def observe(self) -> str | None:
        """The state of the working tree before the decision (None: it cannot be told)."""
        ...

    def start(self, store: GraphStore, decision: Decision, observed: str) -> object | None:
        """Prepare to measure the run of ``decision``, made on the tree ``observed``: a session
        for the runner and :meth:`finish`; None when this evidence cannot be refreshed."""
        ...

    def collect_dir(self, session: object) -> Path:
        """Where the runner's collector writes its evidence."""
        ...

    def finish(self, store: GraphStore, session: object, result: RunResult) -> str:
        """Write the refreshed evidence; return what was done (starting with
        :data:`REFRESHED`) or why nothing was."""
        ...


class Collector(Protocol):
    """Runs the suite (or one shard of it) under instrumentation: what each test executed."""

    python: str  # the interpreter the tests run in, recorded with the evidence

    def collect(self, *, run: int, runs: int, shard: tuple[int, int] | None) -> RunEvidence:
        """Run ``run`` of ``runs`` (0-based); IngestError when pytest does not complete."""
        ...


def store_for_commit(store: GraphStore, sha: str) -> GraphStore:
    """Where the ingest of commit ``sha`` writes: its own graph when evidence is kept per
    commit, else the one graph."""
    return store.writer_for(sha) if isinstance(store, EvidenceBases) else store
