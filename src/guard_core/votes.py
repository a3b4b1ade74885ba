"""The trust policies' votes on a change, and the plug-ins' proposals merged widest-wins."""

from __future__ import annotations

from collections.abc import Sequence

from guard_core.logs import get_logger
from guard_core.model import Decision, Level, Override, OverrideKind, TrustComponents
from guard_core.plugins import Plugins
from guard_core.ports import PolicyInput, TrustPolicy, Vote
from guard_core.safety import widen

log = get_logger("guard.engine")

NO_TRUST = TrustComponents(0.0, 0.0, 0.0)


def run_all_vote(detail: str, policy: str = "default") -> Vote:
    """A vote for the whole suite: a policy that failed, or none to vote."""
    why = (Override(OverrideKind.POLICY_ERROR, detail),)
    return Vote(Level.RUN_ALL, 0.0, NO_TRUST, why, policy)


def widest(votes: Sequence[Vote]) -> Vote:
    """The most conservative vote: the widest level, then the lowest trust."""
    return max(votes, key=lambda v: (v.level.rank, -v.trust))


def votes_of(
    policies: Sequence[TrustPolicy], plugins: Plugins | None, data: PolicyInput
) -> list[Vote]:
    """Every policy's vote and the plug-ins' extra ones; a policy that raises votes run-all."""
    votes: list[Vote] = []
    for policy in policies:
        try:
            votes.append(policy.vote(data))
        except Exception as exc:  # a policy that raises votes for run-all
            name = getattr(policy, "name", type(policy).__name__)
            votes.append(run_all_vote(f"{name}: {exc!r}", name))
    if plugins is not None:
        try:
            votes += plugins.extra_votes(data)
        except Exception as exc:
            votes.append(run_all_vote(f"plugin vote: {exc!r}"))
    return votes or [run_all_vote("no trust policy registered")]


def adjusted(plugins: Plugins | None, decision: Decision, data: PolicyInput) -> Decision:
    """Plug-ins' proposals, merged widest-wins: every proposal's tests stand; one that
    drops an override or raises trust is refused."""
    if plugins is None:
        return decision
    try:
        proposals = plugins.adjust_decision(decision, data)
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
