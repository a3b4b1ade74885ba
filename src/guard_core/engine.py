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
from guard_core.import_replay import select_replaying_imports
from guard_core.logs import get_logger
from guard_core.model import (
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
    TrustComponents,
    split_id,
)
from guard_core.plugins import Plugins
from guard_core.ports import (
    EvidenceBases,
    EvidenceReader,
    ImportProbe,
    PolicyInput,
    Slicer,
    TrustPolicy,
    Vote,
)
from guard_core.read_cache import cached
from guard_core.rules import RuleInput, builtin_rules, run_rules
from guard_core.rules.calls import tests_of_files
from guard_core.safety import forces_run_all, hard_overrides
from guard_core.selection import (
    ReadGate,
    Selection,
    changed_source_files,
    data_files,
    every_test,
    judged_id,
    listed_directories,
    needs_evidence,
    new_test_files,
)
from guard_core.test_code import exists, gone_tests
from guard_core.unexercised import ids_to_ask
from guard_core.unexercised import unexercised as proved_unexercised
from guard_core.variant import DEFAULT, Variant
from guard_core.votes import NO_TRUST, adjusted, votes_of, widest

log = get_logger("guard.engine")

Fingerprint = Callable[[], str | None]
TEST_ROLES = (FileRole.TEST, FileRole.CONFTEST)


def _still_there(reader: EvidenceReader, choice: BaseChoice) -> bool:
    """Whether the base a check read is still what it was when chosen (a graph that vanished
    mid-check reads as empty, which must not pass for "no test runs this")."""
    try:
        info = reader.ingest_info()
    except Exception:
        return False
    return info.coverage_sha == choice.sha and (info.coverage_complete or not choice.complete)


def _runnable(cs: ChangeSet, selection: Selection) -> tuple[str, ...]:
    """The selected ids pytest can run: not those the change deleted, and not the ids inside
    a selected file (a file and ids inside it in one pytest call run only the ids)."""
    gone = gone_tests(cs.regions, cs.files)
    whole_files = {t for t in selection.reasons if "::" not in t}
    return tuple(
        sorted(
            t
            for t in selection.reasons
            if exists(t, gone) and ("::" not in t or split_id(t)[0] not in whole_files)
        )
    )


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
        imports: ImportProbe | None = None,
        variant: Variant = DEFAULT,
    ) -> None:
        self.settings = settings
        self.store = store
        self.slicer = slicer
        self.policies = list(policies)
        self.plugins = plugins
        self.environment = environment
        self.imports = imports
        self.variant = variant

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
            return self.variant.sliced(self.slicer.slice(repo, base))
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
        """Evidence → votes → rules → the safety floor, once: run-all when any
        precondition, hard override or rule's override forces it."""
        conditions, env_changed = self._preconditions(info)
        pre = [*pre, *conditions]
        if env_changed:
            pre.append(Override(OverrideKind.ENVIRONMENT, env_changed))
        if cs.is_empty and not pre:
            return self._nothing_to_run(cs, started)
        data = self._rule_input(cs, info, env_changed)
        vote = widest(votes_of(self.policies, self.plugins, data.policy))

        def select(data: RuleInput) -> Selection:
            selection = Selection()
            selection.overrides.extend(pre)
            run_rules(data, selection, builtin_rules())
            self._plugin_rules(data, selection)
            return selection

        def level_of(selection: Selection) -> tuple[list[Override], Level]:
            # the hard overrides apply whatever the policies voted
            hard = data.policy.hard or ()
            overrides = list(dict.fromkeys([*pre, *hard, *vote.overrides, *selection.overrides]))
            return overrides, Level.RUN_ALL if pre or forces_run_all(overrides) else vote.level

        selection, _ = select_replaying_imports(
            self.imports, data, select, lambda full: level_of(full)[1] is not Level.RUN_ALL
        )
        overrides, level = level_of(selection)
        whole = self._floor(data, selection, level, overrides, vote)
        decision = self._decision(cs, info, selection, level, overrides, vote, started)
        return adjusted(self.plugins, attrs.evolve(decision, whole_suite=whole), data.policy)

    def _decision(
        self,
        cs: ChangeSet,
        info: IngestInfo,
        selection: Selection,
        level: Level,
        overrides: Sequence[Override],
        vote: Vote,
        started: float,
    ) -> Decision:
        """The decision of a selection the rules and the floor made, with its reasons."""
        tests = _runnable(cs, selection)
        total = self._test_count()
        return Decision(
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
        )

    def _nothing_to_run(self, cs: ChangeSet, started: float) -> Decision:
        return Decision(
            level=Level.SUBSET,
            trust=1.0,
            components=TrustComponents(1.0, 1.0, 0.0),
            tests=(),
            reasons={},
            total_tests=self._test_count(),
            change_set=cs,
            skipped_summary=f"no changes against {cs.base[:12]}: nothing to run",
            elapsed_ms=(time.perf_counter() - started) * 1000,
        )

    def _floor(
        self,
        data: RuleInput,
        selection: Selection,
        level: Level,
        overrides: Sequence[Override],
        vote: Vote,
    ) -> bool:
        """What the level adds to the selection: the tests of the changed modules at medium,
        every test at run-all, new test files otherwise. True when a run-all's list is only
        what the graph knows (the consumer must run the whole suite)."""
        cs = data.change
        if level is Level.MEDIUM:
            for test in tests_of_files(data, changed_source_files(cs)):
                selection.add(test, Reason("module-tests", "medium trust: tests of the modules"))
        if level is not Level.RUN_ALL:
            for path in new_test_files(cs):
                selection.add(path, Reason("new-test-file", path))
            return False
        why = "; ".join(o.detail for o in overrides) or (
            f"trust {vote.trust:.2f} < {self.settings.medium_threshold}"
        )
        everything, whole = self._every_test(cs, self._all_tests(), data.info)
        selection.reasons = defaultdict(list, {t: selection.reasons.get(t, []) for t in everything})
        for test in everything:
            selection.add(test, Reason("run-all", why))
        return whole

    def _rule_input(self, cs: ChangeSet, info: IngestInfo, env_changed: str | None) -> RuleInput:
        """The evidence of every changed id, data file and listed folder, the facts of the
        changed functions, and what the policies and rules read of them."""
        s = self.settings
        judged = [judged_id(r) for r in cs.regions if needs_evidence(r)]
        data = data_files(cs)
        listed = listed_directories(cs)
        evidence: dict[str, list[CoverEdge]] = defaultdict(list)
        for e in self.store.covering_tests([*judged, *data, *listed], s.min_confidence):
            evidence[e.function].append(e)
        known = self.store.function_facts([*judged, *ids_to_ask(judged)])
        facts = {f: known[f] for f in judged if f in known}
        complete = info.coverage_complete and bool(info.coverage_sha)
        unexercised = proved_unexercised(judged, known, complete)
        if complete:
            unexercised |= {d for d in data if not evidence.get(d)}
        policy = PolicyInput(
            change_set=cs,
            evidence=evidence,
            facts=facts,
            unexercised=frozenset(unexercised),
            head_sha=cs.base,
            ingest=info,
            seed_policy=self.variant.seed_policy,
            use_confidence=self.variant.use_confidence,
            widening=self.variant.widening,
            subset_threshold=s.subset_threshold,
            medium_threshold=s.medium_threshold,
            environment_changed=env_changed,
        )
        policy = attrs.evolve(policy, hard=tuple(hard_overrides(policy)))
        # recorded lines are base-side lines only when the diff starts at the evidence commit
        v = self.variant
        lines_apply = v.line_evidence and not v.seed_policy and cs.base == info.coverage_sha
        return RuleInput(
            change=cs,
            store=self.store,
            settings=s,
            variant=self.variant,
            info=info,
            evidence=evidence,
            data_files=tuple(data),
            listed=tuple(listed),
            policy=policy,
            lines_apply=lines_apply,
            # a read gates by its lines when the index parsed the tree the evidence measured
            gate=ReadGate(
                lines_apply and bool(info.static_sha) and info.static_sha == info.coverage_sha,
                frozenset(p for f in cs.files for p in (f.path, f.old_path) if p),
            ),
            open_classes=frozenset(
                r.owner_class for r in cs.regions if r.open_class and r.owner_class
            ),
        )

    def _plugin_rules(self, data: RuleInput, selection: Selection) -> None:
        """Plug-ins' selection rules: they add tests and overrides, as the built-in ones; a
        rule that raises makes the check run-all."""
        if self.plugins is None:
            return
        try:
            rules = self.plugins.selection_rules()
            run_rules(data, selection, rules)
        except Exception as exc:
            log.warning("plugin_rule_failed", error=repr(exc))
            selection.overrides.append(
                Override(OverrideKind.POLICY_ERROR, f"plug-in selection rule: {exc!r}")
            )

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
