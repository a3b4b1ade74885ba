"""The non-negotiable rules: overrides the engine applies whatever the trust policies vote, and
the merge that lets plug-ins widen a decision but never narrow it."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from guard_core.model import (
    ChangedRegion,
    ChangeKind,
    Decision,
    FileRole,
    Override,
    OverrideKind,
    Reason,
    RegionKind,
)
from guard_core.ports import PolicyInput


def forces_run_all(overrides: Sequence[Override]) -> bool:
    """Whether any of ``overrides`` is of a kind that forces run-all (the others widen the
    selection without forcing it)."""
    return any(o.forces_run_all for o in overrides)


def judged_ids(data: PolicyInput, functions_only: bool = False) -> list[str]:
    """Changed ids whose pre-existing evidence the decision relies on."""
    return [
        r.old_id or r.id
        for r in data.change_set.regions
        if r.kind is not ChangeKind.ADDED
        and (r.region is RegionKind.FUNCTION or not functions_only)
    ]


def hard_overrides(data: PolicyInput) -> list[Override]:
    """The non-negotiable guards, in the order a human should read them."""
    out: list[Override] = []
    cs = data.change_set
    for problem in cs.problems:
        out.append(Override(OverrideKind.UNREADABLE_CHANGE, problem))
    for hazard in cs.hazards:
        out.append(Override(OverrideKind.SHADOWING, hazard))
    if data.environment_changed:
        out.append(Override(OverrideKind.ENVIRONMENT, data.environment_changed))
    if data.seed_policy:  # the seed's rule; by default test code is code with evidence
        touched = [f.path for f in cs.files if f.role in (FileRole.TEST, FileRole.CONFTEST)]
        if touched:
            out.append(
                Override(
                    OverrideKind.TEST_FILES, "test files changed: " + ", ".join(sorted(touched))
                )
            )
    env_files = [f.path for f in cs.files if f.role is FileRole.ENVIRONMENT]
    if env_files:
        out.append(
            Override(
                OverrideKind.ENVIRONMENT,
                "environment files changed: " + ", ".join(sorted(env_files)),
            )
        )
    data_paths = [p for f in cs.files if f.role is FileRole.DATA for p in (f.path, f.old_path) if p]
    for fid in [*judged_ids(data), *data_paths]:
        if data.evidence.get(fid):
            continue
        if not data.seed_policy and fid in data.unexercised:
            continue  # a complete, fresh ingest saw no test run it: evidence of absence
        out.append(Override(OverrideKind.NO_EVIDENCE, f"{fid} has no coverage evidence"))
    if data.widening:
        for r in cs.regions:
            if r.dynamic_dispatch and needs_widening(r, data):
                out.append(
                    Override(
                        OverrideKind.DYNAMIC_WIDENING,
                        f"{r.id} uses dynamic dispatch; widening to the tests of {r.file}",
                    )
                )
    return out


def needs_widening(region: ChangedRegion, data: PolicyInput) -> bool:
    """Whether a dynamic-dispatch region's change must widen to its module's tests: only where
    its own evidence is incomplete (new, no edges, an edge below full confidence or not
    verified at the base). With complete evidence, the tests that ran it are everyone it can
    affect. The seed's policy always widens."""
    if data.seed_policy or region.kind is ChangeKind.ADDED:
        return True
    edges = data.evidence.get(region.old_id or region.id, ())
    if not edges:
        return True
    fresh = data.ingest.fresh_shas(data.head_sha)
    return any(e.confidence < 1.0 or e.last_verified_sha not in fresh for e in edges)


def widen(decision: Decision, proposal: Decision) -> Decision | None:
    """``decision`` widened by a plug-in's ``proposal``: the union of tests and reasons, the
    wider level; None when the proposal drops an override or raises trust (refused)."""
    if proposal.trust > decision.trust + 1e-9:
        return None
    if not set(decision.overrides) <= set(proposal.overrides):
        return None
    if proposal.whole_suite is False and decision.whole_suite:
        proposal = attrs.evolve(proposal, whole_suite=True)
    reasons: dict[str, list[Reason]] = {t: list(rs) for t, rs in decision.reasons.items()}
    for test, given in proposal.reasons.items():
        mine = reasons.setdefault(test, [])
        mine += [r for r in given if r not in mine]
    for test in proposal.tests:
        if test not in reasons:
            reasons[test] = [Reason("plugin", "added by a guard_adjust_decision plug-in")]
    tests = tuple(sorted({*decision.tests, *proposal.tests}))
    level = max(decision.level, proposal.level, key=lambda lv: lv.rank)
    return attrs.evolve(
        decision,
        level=level,
        tests=tests,
        reasons={t: tuple(reasons.get(t, ())) for t in tests},
        overrides=tuple(dict.fromkeys((*decision.overrides, *proposal.overrides))),
        total_tests=max(decision.total_tests, proposal.total_tests, len(tests)),
        whole_suite=decision.whole_suite or proposal.whole_suite,
        skipped_summary=decision.skipped_summary
        if level is decision.level
        else proposal.skipped_summary,
    )


__all__ = ["forces_run_all", "hard_overrides", "judged_ids", "needs_widening", "widen"]
