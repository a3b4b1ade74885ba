"""Small in-memory fakes of the ports, for unit tests and for plugin authors' own tests."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs

from guard_core.index_model import BodyStatements, FileIndex, reflective_facts
from guard_core.model import (
    MODULE_SCOPE,
    ChangeSet,
    CoverEdge,
    GraphStats,
    IngestInfo,
    RunRecord,
    split_id,
)
from guard_core.ports import Caller, FunctionFacts

MODULE = f"::{MODULE_SCOPE}"


@attrs.define
class FakeStore:
    """A graph store held in dicts. Set ``fail`` to make every call raise it."""

    edges: list[CoverEdge] = attrs.field(factory=list)
    functions: dict[str, FunctionFacts] = attrs.field(factory=dict)
    tests: list[str] = attrs.field(factory=list)
    info: IngestInfo = attrs.field(
        factory=lambda: IngestInfo(coverage_sha="base", coverage_complete=True)
    )
    fail: Exception | None = None
    runs: list[RunRecord] = attrs.field(factory=list)
    spawners: list[str] = attrs.field(factory=list)
    doctests: list[str] = attrs.field(factory=list)
    modules: list[str] = attrs.field(factory=list)  # dotted names of the repository's modules
    refs: dict[str, list[str]] = attrs.field(factory=dict)  # function id -> dotted names read
    classes: list[str] = attrs.field(factory=list)  # dotted names of the repository's classes
    dotted_functions: list[str] = attrs.field(factory=list)
    # function id -> attribute names it reads; None: an index without attribute reads
    attributes: dict[str, list[str]] | None = None
    # function id -> name read (a ref, ".attr") -> the lines that read it
    lines_read: dict[str, dict[str, frozenset[int]]] = attrs.field(factory=dict)

    def _check(self) -> None:
        if self.fail is not None:
            raise self.fail

    def ensure_schema(self) -> None: ...
    def close(self) -> None: ...
    def clear(self) -> None:
        self.edges.clear()

    def stats(self) -> GraphStats:
        return GraphStats(
            functions=len(self.functions), tests=len(self.tests), covered_by=len(self.edges)
        )

    def ingest_info(self) -> IngestInfo:
        self._check()
        return self.info

    def update_ingest_info(self, **fields: object) -> None:
        """As a real store keeps them: JSON-encoded fields are read back decoded."""
        stored = {k: v for k, v in fields.items() if k in ("known_failures", "session_ran")}
        decoded = IngestInfo.from_mapping({"known_failures": "{}", **stored})
        fields |= {k: getattr(decoded, k) for k in stored}
        self.info = attrs.evolve(self.info, **fields)  # type: ignore[arg-type]

    def file_hashes(self) -> dict[str, str]:
        return {}

    def write_files(self, files: Sequence[FileIndex]) -> None: ...
    def remove_files(self, paths: Iterable[str]) -> None: ...

    def write_coverage(
        self, edges: Iterable[CoverEdge], *, sha: str, tests: Iterable[str], replace: bool
    ) -> None:
        self.edges.extend(edges)

    def set_flake_rates(self, rates: dict[str, float]) -> None: ...
    def set_test_kinds(self, kinds: dict[str, tuple[bool, bool]]) -> None:
        self.spawners = sorted(
            {*self.spawners, *(t for t, (s, _) in kinds.items() if s)}
            - {t for t, (s, _) in kinds.items() if not s}
        )
        self.doctests = sorted(
            {*self.doctests, *(t for t, (_, d) in kinds.items() if d)}
            - {t for t, (_, d) in kinds.items() if not d}
        )

    def spawning_tests(self) -> list[str]:
        self._check()
        return list(self.spawners)

    def doctest_items(self) -> list[str]:
        self._check()
        return list(self.doctests)

    def imported_files(self) -> list[str]:
        self._check()
        return sorted({split_id(e.function)[0] for e in self.edges if e.function.endswith(MODULE)})

    def modules_among(self, names: Iterable[str]) -> set[str]:
        return set(names) & set(self.modules)

    def classes_among(self, names: Iterable[str]) -> set[str]:
        return set(names) & set(self.classes)

    def functions_among(self, names: Iterable[str]) -> set[str]:
        return set(names) & set(self.dotted_functions)

    def attribute_readers(self, names: Iterable[str]) -> list[tuple[str, str]] | None:
        if self.attributes is None:
            return None
        wanted = reflective_facts(names)
        return [
            (f, a) for f, attrs_ in sorted(self.attributes.items()) for a in attrs_ if a in wanted
        ]

    def mark_shard(self, sha: str, shard: int, shards: int, tests: int = 1) -> bool:
        """One shard in all: complete once it ran a test."""
        self.info = attrs.evolve(self.info, coverage_complete=tests > 0)
        return tests > 0

    def set_edge_lines(self, edges: Iterable[CoverEdge]) -> None: ...
    def restamp_edges(self, old_shas: Sequence[str], new_sha: str) -> None: ...
    def mark_unproven(self, function_ids: Iterable[str]) -> None: ...
    def clear_unproven(self) -> None: ...

    def covering_tests(
        self, function_ids: Iterable[str], min_confidence: float = 0.0, lines: bool = True
    ) -> list[CoverEdge]:
        self._check()
        ids = set(function_ids)
        return [e for e in self.edges if e.function in ids and e.confidence >= min_confidence]

    def tests_covering(
        self, function_ids: Iterable[str], min_confidence: float = 0.0, per_test: int = 3
    ) -> list[CoverEdge]:
        kept: dict[str, list[CoverEdge]] = {}
        for e in sorted(
            self.covering_tests(function_ids, min_confidence), key=lambda e: -e.confidence
        ):
            kept.setdefault(e.test, [])
            if len(kept[e.test]) < per_test:
                kept[e.test].append(e)
        return [e for edges in kept.values() for e in edges]

    def callers(self, function_id: str, hops: int, min_confidence: float) -> list[Caller]:
        return []

    def memo_callers(self, function_ids: Iterable[str], hops: int) -> dict[str, str]:
        return {}

    def function_facts(self, ids: Iterable[str]) -> dict[str, FunctionFacts]:
        self._check()
        return {i: self.functions[i] for i in ids if i in self.functions}

    def repair_tests_of_callees(
        self, function_ids: Iterable[str], hops: int = 3
    ) -> list[CoverEdge]:
        return []

    def functions_of_files(self, paths: Iterable[str]) -> dict[str, list[str]]:
        wanted = set(paths)
        out: dict[str, list[str]] = {}
        for f in self.functions.values():
            if f.file in wanted:
                out.setdefault(f.file, []).append(f.id)
        return out

    def tests_of_files(self, paths: Iterable[str]) -> dict[str, list[str]]:
        out: dict[str, set[str]] = {}
        for path, fids in self.functions_of_files(paths).items():
            out[path] = {e.test for e in self.edges if e.function in fids}
        return {p: sorted(t) for p, t in out.items()}

    def all_tests(self) -> list[str]:
        return sorted(self.tests)

    def test_count(self) -> int:
        return len(self.tests)

    def all_functions(self) -> list[str]:
        return sorted(self.functions)

    def aliases_of(self, names: Iterable[str]) -> dict[str, list[str]]:
        return {}

    def importers_of(self, names: Iterable[str], stars: bool = True) -> list[str]:
        """Files whose module body reads one of ``names`` (``refs`` of ``FILE::<module>``),
        or, with ``stars``, star-imports its module."""
        wanted = set(names)
        if stars:
            wanted |= {f"{n.rpartition('.')[0]}.*" for n in wanted if "." in n}
        return sorted(
            split_id(fid)[0]
            for fid, refs in self.refs.items()
            if split_id(fid)[1] == "<module>" and wanted.intersection(refs)
        )

    def readers_of(self, names: Iterable[str]) -> list[tuple[str, str, str, str]]:
        wanted = set(names)
        return [
            (fid, split_id(fid)[1], "", ref)
            for fid, refs in sorted(self.refs.items())
            for ref in refs
            if ref in wanted
            or any(ref.startswith(n + ".") or n.startswith(ref + ".") for n in wanted)
        ]

    def functions_named(self, name: str) -> list[str]:
        return []

    def statement_bindings(self, ids: Iterable[str]) -> dict[str, BodyStatements]:
        return {}

    def read_lines(self, ids: Iterable[str]) -> dict[str, dict[str, frozenset[int]]]:
        return {f: dict(self.lines_read[f]) for f in set(ids) if self.lines_read.get(f)}

    def record_run(self, run: RunRecord) -> None:
        self.runs.append(run)

    def add_repair_edge(self, function_id: str, test_id: str, sha: str) -> None:
        self.edges.append(CoverEdge(function_id, test_id, "miss_repair", 1.0, 1, sha))


@attrs.define
class FakeSlicer:
    """Returns a fixed change set (or raises ``fail``)."""

    change_set: ChangeSet
    fail: Exception | None = None

    def slice(self, repo: Path, base: str | None = None) -> ChangeSet:
        if self.fail is not None:
            raise self.fail
        return attrs.evolve(self.change_set, base=base or self.change_set.base)
