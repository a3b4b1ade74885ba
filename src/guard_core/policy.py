"""The default trust policy: the trust formula and its levels.

The hard overrides live in :mod:`guard_core.safety` and the engine applies them whatever any
policy votes; this policy reports them too, so its vote explains itself."""

from __future__ import annotations

from guard_core.model import Level, TrustComponents
from guard_core.plugins import AdapterRegistry, hookimpl
from guard_core.ports import PolicyInput, Vote
from guard_core.safety import forces_run_all, hard_overrides, judged_ids


def level_for(trust: float, subset: float, medium: float) -> Level:
    if trust >= subset:
        return Level.SUBSET
    if trust >= medium:
        return Level.MEDIUM
    return Level.RUN_ALL


def trust_components(data: PolicyInput) -> TrustComponents:
    """The three terms, as the seed defines them.

    EvidenceRatio: mean of the best covering-edge confidence per changed function (0 without
    edges; 1 for a function the ingest proved unexercised). Freshness: share of evidence edges
    verified at the commit the diff is taken against. UncertainRatio: share of changed
    functions with dynamic dispatch.
    """
    judged = judged_ids(data, functions_only=True)
    current = data.ingest.fresh_shas(data.head_sha)
    best: list[float] = []
    edges = 0
    fresh = 0
    for fid in judged:
        fedges = data.evidence.get(fid, ())
        if fedges:
            best.append(max(e.confidence for e in fedges) if data.use_confidence else 1.0)
        elif not data.seed_policy and fid in data.unexercised:
            best.append(1.0)
        else:
            best.append(0.0)
        for e in fedges:
            edges += 1
            fresh += e.last_verified_sha in current
    regions = data.change_set.regions
    uncertain = sum(r.dynamic_dispatch for r in regions)
    return TrustComponents(
        evidence_ratio=sum(best) / len(best) if best else 1.0,
        freshness=fresh / edges if edges else 1.0,
        uncertain_ratio=uncertain / len(regions) if regions else 0.0,
    )


class DefaultTrustPolicy:
    """Overrides, then ``Trust = 0.5·EvidenceRatio + 0.3·Freshness + 0.2·(1 - UncertainRatio)``."""

    name = "default"

    def vote(self, data: PolicyInput) -> Vote:
        overrides = data.hard if data.hard is not None else tuple(hard_overrides(data))
        components = trust_components(data)
        trust = components.trust
        level = level_for(trust, data.subset_threshold, data.medium_threshold)
        if forces_run_all(overrides):
            level = Level.RUN_ALL
        return Vote(
            level=level, trust=trust, components=components, overrides=overrides, policy=self.name
        )


@hookimpl
def guard_register_adapters(registry: AdapterRegistry) -> None:
    registry.add_trust_policy("default", lambda _settings: DefaultTrustPolicy())
