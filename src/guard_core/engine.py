"""The use cases: check (which tests must run, and why), and feedback (repair the graph).

Everything here talks to ports only. Every failure ends in run-all with the reason, never in
a smaller selection.
"""

from __future__ import annotations

import copy
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs

from guard_core.bases import BaseChoice, Distance, EvidenceBase, choose_base
from guard_core.config import Settings
from guard_core.errors import RepositoryError
from guard_core.lines import observers
from guard_core.logs import get_logger
from guard_core.model import (
    ChangedRegion,
    ChangeKind,
    ChangeSet,
    CoverEdge,
    Decision,
    FileKind,
    FileRole,
    IngestInfo,
    Level,
    Override,
    OverrideKind,
    Reason,
    RegionKind,
    TrustComponents,
    split_id,
)
from guard_core.plugins import Plugins
from guard_core.ports import (
    EvidenceBases,
    EvidenceReader,
    PolicyInput,
    Slicer,
    TrustPolicy,
    Vote,
)
from guard_core.read_cache import cached
from guard_core.safety import forces_run_all, hard_overrides, needs_widening, widen
from guard_core.selection import (
    ReadGate,
    Selection,
    changed_source_files,
    data_files,
    every_test,
    is_method,
    judged_id,
    listed_directories,
    module_region,
    names_closure,
    needs_evidence,
    new_test_files,
    select_memoised_callers,
    select_readers,
)
from guard_core.test_code import exists, gone_tests, test_code_reasons

log = get_logger("guard.engine")

Fingerprint = Callable[[], str | None]
NO_TRUST = TrustComponents(0.0, 0.0, 0.0)
TEST_ROLES = (FileRole.TEST, FileRole.CONFTEST)


def _still_there(reader: EvidenceReader, choice: BaseChoice) -> bool:
    """Whether the base a check read is still what it was when chosen (a graph that vanished
    mid-check reads as empty, which must not pass for "no test runs this")."""
    try:
        info = reader.ingest_info()
    except Exception:
        return False
    return info.coverage_sha == choice.sha and (info.coverage_complete or not choice.complete)


def _widest(votes: Sequence[Vote]) -> Vote:
    return max(votes, key=lambda v: (v.level.rank, -v.trust))


class Engine:
    """Decides which tests a change needs, from a slicer, a graph store and trust policies."""

    def __init__(
        self,
        settings: Settings,
        store: EvidenceReader,
        slicer: Slicer,
        policies: Sequence[TrustPolicy],
        plugins: Plugins | None = None,
        environment: Fingerprint | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.slicer = slicer
        self.policies = list(policies)
        self.plugins = plugins
        self.environment = environment

    # -- check ----------------------------------------------------------------------------------

    def check(self, base: str | None = None) -> Decision:
        """The decision for the working tree against ``base`` (default: the commit the evidence
        was collected at, so commits made since the ingest are part of the change)."""
        started = time.perf_counter()
        one = copy.copy(self)  # this check's reads are cached for this check only
        reader, choice = self._base_reader()
        one.store = cached(reader)
        decision = one._check(base, choice, started)
        if choice is None:
            return decision
        if choice.sha and not _still_there(reader, choice):
            gone = f"the evidence of {choice.sha[:12]} was deleted or rewritten while read"
            decision = one._run_all(
                decision.change_set, [Override(OverrideKind.STALE_GRAPH, gone)], started
            )
        return attrs.evolve(decision, evidence=choice)

    def _base_reader(self) -> tuple[EvidenceReader, BaseChoice | None]:
        """The evidence this check reads: with evidence kept per commit, the base nearest
        HEAD, leased for the check (chosen again if it was pruned meanwhile)."""
        store = self.store
        if not isinstance(store, EvidenceBases):
            return store, None
        plugins = self.plugins
        repo = self.settings.repo

        def distances(bases: Sequence[EvidenceBase]) -> dict[str, Distance]:
            return plugins.commit_distances(repo, bases) if plugins else {}

        try:
            for _ in range(2):
                choice = choose_base(store.evidence_bases(), distances)
                if not choice.sha:
                    return store, choice
                reader = store.at_base(choice.sha)
                if reader is not None:
                    return reader, choice
            return store, BaseChoice("", "the evidence bases were being pruned")
        except Exception as exc:  # the check goes on and runs everything, saying why
            log.warning("bases_unreadable", error=repr(exc))
            return store, BaseChoice("", f"cannot list the evidence bases: {exc}")

    def _check(self, base: str | None, choice: BaseChoice | None, started: float) -> Decision:
        repo: Path = self.settings.repo
        pre: list[Override] = []
        if choice is not None and not choice.sha:
            pre.append(Override(OverrideKind.STALE_GRAPH, choice.reason))
        try:
            info = self.store.ingest_info()
        except Exception as exc:  # an adapter's own error type must not escape either
            cs = self._slice(repo, base)
            return self._run_all(
                cs, [*pre, Override(OverrideKind.STORE, f"graph unavailable: {exc}")], started
            )
        evidence_base = base or info.coverage_sha
        try:
            cs = self._slice(repo, evidence_base)
        except RepositoryError:
            if base is not None or evidence_base is None:
                raise
            cs = self._slice(repo, None)
            pre.append(
                Override(
                    OverrideKind.STALE_GRAPH,
                    f"the evidence commit {evidence_base[:12]} is "
                    "not in this clone; run guard ingest-coverage",
                )
            )
        try:
            return self._decide(cs, info, pre, started)
        except Exception as exc:  # fail safe: any internal error selects everything
            log.warning("decision_failed", error=repr(exc), exc_info=True)
            return self._run_all(
                cs, [*pre, Override(OverrideKind.INTERNAL_ERROR, repr(exc))], started
            )

    def _slice(self, repo: Path, base: str | None) -> ChangeSet:
        """The slicer's change set; a repository problem stays a clear error, any other
        failure is a change set that cannot be read (run-all)."""
        try:
            return self.slicer.slice(repo, base)
        except RepositoryError:
            raise
        except Exception as exc:
            log.warning("slice_failed", error=repr(exc), exc_info=True)
            return ChangeSet(base=base or "HEAD", problems=(f"cannot slice the change: {exc!r}",))

    def _all_tests(self) -> list[str]:
        try:
            return self.store.all_tests()
        except Exception:  # run-all without a list: the whole suite
            return []

    def _test_count(self) -> int:
        try:
            return self.store.test_count()
        except Exception:  # a store without the count (an older plug-in): count the ids
            return len(self._all_tests())

    def _run_all(self, cs: ChangeSet, overrides: list[Override], started: float) -> Decision:
        tests, whole = self._every_test(cs, self._all_tests())
        reason = "; ".join(o.detail for o in overrides) or "run-all"
        return Decision(
            level=Level.RUN_ALL,
            trust=0.0,
            components=NO_TRUST,
            tests=tests,
            reasons={t: (Reason("run-all", reason),) for t in tests},
            total_tests=len(tests),
            overrides=tuple(overrides),
            change_set=cs,
            skipped_summary="nothing skipped",
            elapsed_ms=(time.perf_counter() - started) * 1000,
            whole_suite=whole,
        )

    def _every_test(
        self, cs: ChangeSet, known: Sequence[str], info: IngestInfo | None = None
    ) -> tuple[tuple[str, ...], bool]:
        """Every test a run-all must run, and whether that list is only what the graph knows
        (no graph, partial evidence: the consumer must run the whole suite). The tests of new
        and changed test modules are given as their file, so tests Guard has not seen run; so
        are new source modules of a project with doctests (they may hold new ones)."""
        whole = not known or info is None or not info.coverage_complete
        if whole:
            return every_test(cs, known), whole
        new = [
            f.path
            for f in cs.files
            if f.role is FileRole.SOURCE and f.kind in (FileKind.ADDED, FileKind.RENAMED)
        ]
        try:
            doctests = bool(new) and bool(self.store.doctest_items())
        except Exception:  # cannot tell: the whole suite
            return every_test(cs, known), True
        return every_test(cs, known, new if doctests else ()), False

    def _preconditions(self, info: IngestInfo) -> tuple[list[Override], str | None]:
        out = []
        if not info.coverage_sha:
            out.append(
                Override(
                    OverrideKind.STALE_GRAPH,
                    "no coverage evidence yet; run `guard ingest-coverage`",
                )
            )
        elif not info.coverage_complete:
            out.append(
                Override(OverrideKind.STALE_GRAPH, "the last coverage ingest did not complete")
            )
        changed = None
        if self.environment is not None and info.environment:
            current = self.environment()
            if current != info.environment:
                changed = "the Python version or installed packages changed since the ingest"
        return out, changed

    def _decide(
        self, cs: ChangeSet, info: IngestInfo, pre: list[Override], started: float
    ) -> Decision:
        conditions, env_changed = self._preconditions(info)
        pre = [*pre, *conditions]
        if env_changed:
            pre.append(Override(OverrideKind.ENVIRONMENT, env_changed))
        if cs.is_empty and not pre:
            total = self._test_count()
            return Decision(
                level=Level.SUBSET,
                trust=1.0,
                components=TrustComponents(1.0, 1.0, 0.0),
                tests=(),
                reasons={},
                total_tests=total,
                change_set=cs,
                skipped_summary=f"no changes against {cs.base[:12]}: nothing to run",
                elapsed_ms=(time.perf_counter() - started) * 1000,
            )
        s = self.settings
        floor = s.min_confidence
        judged = [judged_id(r) for r in cs.regions if needs_evidence(r)]
        data = data_files(cs)
        listed = listed_directories(cs)
        edges = self.store.covering_tests([*judged, *data, *listed], floor)
        evidence: dict[str, list[CoverEdge]] = defaultdict(list)
        for e in edges:
            evidence[e.function].append(e)
        modules = {module_region(split_id(f)[0]) for f in judged}
        known = self.store.function_facts([*judged, *modules])
        facts = {f: known[f] for f in judged if f in known}
        complete = info.coverage_complete and bool(info.coverage_sha)
        # no edges prove a function unexercised only where its module ran under measurement:
        # a module never imported in-process may run in a child process or from site-packages
        imported = {m for m in modules if m in known and not known[m].no_evidence}
        unexercised = {
            f
            for f, fact in facts.items()
            if fact.no_evidence and complete and module_region(split_id(f)[0]) in imported
        }
        if complete:
            unexercised |= {d for d in data if not evidence.get(d)}
        data_input = PolicyInput(
            change_set=cs,
            evidence=evidence,
            facts=facts,
            unexercised=frozenset(unexercised),
            head_sha=cs.base,
            ingest=info,
            seed_policy=s.seed_policy,
            use_confidence=s.use_confidence,
            widening=s.widening,
            subset_threshold=s.subset_threshold,
            medium_threshold=s.medium_threshold,
            environment_changed=env_changed,
        )
        vote = _widest(self._votes(data_input))
        hard = hard_overrides(data_input)  # applied whatever the policies voted
        level = Level.RUN_ALL if pre or forces_run_all(hard) else vote.level
        selection = Selection()
        selection.overrides.extend(pre)
        # recorded lines are base-side lines only when the diff starts at the evidence commit
        lines_apply = s.line_evidence and not s.seed_policy and cs.base == info.coverage_sha
        open_classes = frozenset(
            r.owner_class for r in cs.regions if r.open_class and r.owner_class
        )
        # a read gates by its lines when the index parsed the tree the evidence measured
        gate = ReadGate(
            lines_apply and bool(info.static_sha) and info.static_sha == info.coverage_sha,
            frozenset(p for f in cs.files for p in (f.path, f.old_path) if p),
        )
        for region in cs.regions:
            self._select_region(region, evidence, selection, lines_apply, open_classes, gate)
        if not s.seed_policy and any(f.role in TEST_ROLES for f in cs.files):
            files = {f.path: f for f in cs.files}
            everyone = self._all_tests()
            for test, reason in test_code_reasons(cs.regions, files, everyone):
                selection.add(test, reason)
        removed = sorted({n for r in cs.regions for n in r.removed})
        if removed and not s.seed_policy:  # `from m import gone` now fails at import time
            # `from pkg import gone` where pkg re-exports it (through `import *` too)
            exported = sorted(names_closure(self.store, removed))
            missing = {*exported, *(f"{n.rpartition('.')[0]}.*" for n in exported)}
            after = {f.path: f.imports_after for f in cs.files}
            # `from m import *` binds what m has, unless its __all__ names what it lost (a
            # module that re-exports it may list it in an __all__ of its own: unknown)
            losing = {r.file for r in cs.regions if r.removed}
            stars_fail = any(f.star_breaks for f in cs.files if f.path in losing)
            by_name = set(self.store.importers_of(exported, stars=False))
            of_losers = set(self.store.importers_of(removed))
            for path in self.store.importers_of(exported):
                if path not in by_name and path in of_losers and not stars_fail:
                    continue  # only a star import: the readers of the names it bound speak
                if (now := after.get(path)) is not None and not now & missing:
                    continue  # changed too, and no longer imports it: its own regions speak
                self._importers(
                    path, selection, "imports-removed-name", f"{path} imports {', '.join(removed)}"
                )
        for path in data:
            selection.add_edges(evidence.get(path, ()), "reads-data-file")
        for folder in listed:
            selection.add_edges(evidence.get(folder, ()), "lists-changed-folder")
        if cs.dependents:
            via = {d.id: d.via for d in cs.dependents}
            for e in self.store.covering_tests(sorted(via), 0.0, lines=False):
                selection.add(e.test, Reason("names-new-module", via[e.function], e.confidence))
        if not s.seed_policy:
            self._doctests(cs, selection)
        if (cs.regions or data or listed or cs.dependents) and not s.seed_policy:
            for test in self.store.spawning_tests():  # a comment-only edit changes no code
                selection.add(
                    test,
                    Reason(
                        "spawns-python", "starts a Python child process whose code is unmeasured"
                    ),
                )
        bodies = [
            judged_id(r)
            for r in cs.regions
            if r.region is RegionKind.FUNCTION and needs_evidence(r)
        ]
        if not s.seed_policy:
            select_memoised_callers(
                self.store,
                [r for r in cs.regions if r.region is RegionKind.FUNCTION and needs_evidence(r)],
                selection,
                s.min_confidence,
            )
        if bodies:
            selection.add_edges(self.store.repair_tests_of_callees(bodies), "repaired-callee")
        if s.widening:
            for region in cs.regions:
                if region.dynamic_dispatch and needs_widening(region, data_input):
                    for test in self._tests_of([region.file]):
                        selection.add(test, Reason("dynamic-widening", region.id))
        overrides = list(dict.fromkeys([*pre, *hard, *vote.overrides, *selection.overrides]))
        if forces_run_all(selection.overrides):
            level = Level.RUN_ALL
        if level is Level.MEDIUM:
            for test in self._tests_of(changed_source_files(cs)):
                selection.add(test, Reason("module-tests", "medium trust: tests of the modules"))
        total = self._test_count()
        whole = False
        if level is Level.RUN_ALL:
            why = (
                "; ".join(o.detail for o in overrides)
                or f"trust {vote.trust:.2f} < {s.medium_threshold}"
            )
            everything, whole = self._every_test(cs, self._all_tests(), info)
            selection.reasons = defaultdict(
                list, {t: selection.reasons.get(t, []) for t in everything}
            )
            for test in everything:
                selection.add(test, Reason("run-all", why))
        else:
            for path in new_test_files(cs):
                selection.add(path, Reason("new-test-file", path))
        gone = gone_tests(cs.regions, cs.files)
        whole_files = {t for t in selection.reasons if "::" not in t}
        # a file and ids inside it in one pytest call run only the ids: keep the file
        tests = tuple(
            sorted(
                t
                for t in selection.reasons
                if exists(t, gone) and ("::" not in t or split_id(t)[0] not in whole_files)
            )
        )
        decision = Decision(
            level=level,
            trust=vote.trust,
            components=vote.components,
            tests=tests,
            reasons={t: tuple(selection.reasons[t]) for t in tests},
            total_tests=max(total, len(tests)),
            overrides=tuple(overrides),
            change_set=cs,
            skipped_summary=self._skipped(total, len(tests), info, level),
            elapsed_ms=(time.perf_counter() - started) * 1000,
            whole_suite=whole,
        )
        return self._adjust(decision, data_input)

    def _votes(self, data: PolicyInput) -> list[Vote]:
        votes: list[Vote] = []
        for policy in self.policies:
            try:
                votes.append(policy.vote(data))
            except Exception as exc:  # a policy that raises votes for run-all
                name = getattr(policy, "name", type(policy).__name__)
                votes.append(
                    Vote(
                        Level.RUN_ALL,
                        0.0,
                        NO_TRUST,
                        (Override(OverrideKind.POLICY_ERROR, f"{name}: {exc!r}"),),
                        name,
                    )
                )
        if self.plugins is not None:
            try:
                votes += self.plugins.extra_votes(data)
            except Exception as exc:
                votes.append(
                    Vote(
                        Level.RUN_ALL,
                        0.0,
                        NO_TRUST,
                        (Override(OverrideKind.POLICY_ERROR, f"plugin vote: {exc!r}"),),
                    )
                )
        if not votes:
            votes.append(
                Vote(
                    Level.RUN_ALL,
                    0.0,
                    NO_TRUST,
                    (Override(OverrideKind.POLICY_ERROR, "no trust policy registered"),),
                )
            )
        return votes

    def _adjust(self, decision: Decision, data: PolicyInput) -> Decision:
        """Plug-ins' proposals, merged widest-wins: every proposal's tests stand; one that
        drops an override or raises trust is refused."""
        if self.plugins is None:
            return decision
        try:
            proposals = self.plugins.adjust_decision(decision, data)
        except Exception as exc:
            log.warning("adjust_failed", error=repr(exc))
            return decision
        merged = decision
        for proposal in proposals:
            widened = widen(merged, proposal) if isinstance(proposal, Decision) else None
            if widened is None:
                log.warning(
                    "adjustment_refused",
                    reason="plug-ins may widen, never drop an override or raise trust",
                )
                continue
            merged = widened
        return merged

    def _tests_of(self, files: Sequence[str]) -> list[str]:
        if not files:
            return []
        return sorted({t for ts in self.store.tests_of_files(files).values() for t in ts})

    def _importers(self, path: str, selection: Selection, rule: str, via: str) -> None:
        floor = self.settings.min_confidence
        for e in self.store.covering_tests([module_region(path)], floor, lines=False):
            selection.add(e.test, Reason(rule, via, e.confidence))

    def _select_region(
        self,
        region: ChangedRegion,
        evidence: dict[str, list[CoverEdge]],
        selection: Selection,
        lines_apply: bool,
        open_classes: frozenset[str] = frozenset(),
        gate: ReadGate | None = None,
    ) -> None:
        s = self.settings
        fid = judged_id(region)
        own = evidence.get(fid, [])
        refined = not s.seed_policy
        if region.region is RegionKind.FUNCTION:
            if region.kind is ChangeKind.ADDED:
                if refined and is_method(region):  # may override a base-class method
                    name = region.id.rsplit(".", 1)[-1].split("#")[0]
                    others = [f for f in self.store.functions_named(name) if f != region.id]
                    for e in self.store.covering_tests(others, s.min_confidence, lines=False):
                        selection.add(e.test, Reason("same-name-method", e.function, e.confidence))
                if region.side_effects:
                    self._importers(region.file, selection, "import-time-code", region.id)
                return
            # a memo function's stored results were computed by lines its readers never ran
            localised = (
                lines_apply and region.hunks and not region.definition_changed and not region.memo
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
                    frozenset(region.names)
                    if covered and own and not localised and region.calls_through
                    else frozenset()
                )
                select_readers(
                    self.store,
                    region.names,
                    evidence,
                    selection,
                    region.id,
                    s.min_confidence,
                    open_classes,
                    calls_seen,
                    region.rebinds,
                    gate,
                )
            if region.side_effects or (region.definition_changed and not refined):
                self._importers(region.file, selection, "import-time-code", region.id)
            return
        if region.kind is ChangeKind.ADDED and not region.side_effects:
            return  # a new module or class: only changed code can reach it
        if not refined or region.side_effects or not region.names:
            selection.add_edges(own, "import-time-code")
            if region.kind is ChangeKind.ADDED or not own:
                self._importers(region.file, selection, "import-time-code", region.id)
            return
        select_readers(
            self.store,
            region.names,
            evidence,
            selection,
            region.id,
            s.min_confidence,
            open_classes,
            gate=gate,
        )

    def _doctests(self, cs: ChangeSet, selection: Selection) -> None:
        """Doctest items read values through their namespace, which no index sees: a changed
        module-level or class-body binding selects them all; a changed docstring, the
        doctests of its file (the docstring may be one). Calls they make are in evidence."""
        values = any(r.names and r.region is not RegionKind.FUNCTION for r in cs.regions)
        docs = {r.file for r in cs.regions if r.doc_changed}
        docs |= {
            f.path
            for f in cs.files
            if f.role is FileRole.SOURCE and f.kind in (FileKind.ADDED, FileKind.RENAMED)
        }
        if not values and not docs:
            return
        items = self.store.doctest_items()
        for test in items:
            if values or split_id(test)[0] in docs:
                selection.add(test, Reason("doctest", "doctests read names no index sees"))
        for path in sorted(docs) if items else ():  # doctests the graph has not seen yet
            selection.add(path, Reason("doctest", f"{path} may hold new doctests"))

    @staticmethod
    def _skipped(total: int, selected: int, info: IngestInfo, level: Level) -> str:
        if level is Level.RUN_ALL:
            return "nothing skipped"
        skipped = max(total - selected, 0)
        sha = (info.coverage_sha or "")[:12]
        return (
            f"{skipped} of {total} tests skipped: no evidence that they execute the changed "
            f"code (coverage recorded at {sha})"
        )
