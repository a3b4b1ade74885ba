"""A Guard plugin: edits under protected paths (migrations, settings, security code) run the
whole suite, and a team-chosen smoke test always runs.

Install it next to Guard (``pip install ./examples/strict_policy_plugin``); Guard finds it
through the ``guard`` entry-point group. Configure with ``GUARD_PROTECTED`` (comma-separated
path prefixes) and ``GUARD_ALWAYS_RUN`` (comma-separated test ids).
"""

from __future__ import annotations

import os

import attrs

from guard_core import Decision, Level, Override, Reason, TrustComponents, hookimpl
from guard_core.ports import PolicyInput, Vote

DEFAULT_PROTECTED = ("migrations/", "settings/", "security/")


def _listed(variable: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
    raw = os.environ.get(variable)
    return default if raw is None else tuple(p.strip() for p in raw.split(",") if p.strip())


@hookimpl
def guard_trust_vote(data: PolicyInput) -> Vote | None:
    """Vote run-all when a protected path changed; abstain otherwise."""
    protected = _listed("GUARD_PROTECTED", DEFAULT_PROTECTED)
    touched = [f.path for f in data.change_set.files if f.path.startswith(protected)]
    if not touched:
        return None
    return Vote(
        level=Level.RUN_ALL,
        trust=0.0,
        components=TrustComponents(0.0, 0.0, 0.0),
        overrides=(Override("protected-path", f"protected path changed: {', '.join(touched)}"),),
        policy="strict",
    )


@hookimpl
def guard_adjust_decision(decision: Decision, data: PolicyInput) -> Decision | None:
    """Add the always-run tests to every subset (plugins may widen, never narrow)."""
    extra = [t for t in _listed("GUARD_ALWAYS_RUN") if t not in decision.tests]
    if decision.level is Level.RUN_ALL or not extra or not data.change_set.files:
        return None
    why = (Reason("always-run", "GUARD_ALWAYS_RUN"),)
    return attrs.evolve(
        decision,
        tests=(*decision.tests, *extra),
        reasons={**decision.reasons, **{t: why for t in extra}},
    )
