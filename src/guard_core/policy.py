"""The default trust policy: hard overrides first, then the trust formula and its levels."""

from __future__ import annotations

from guard_core.model import (
    ChangeKind,
    FileRole,
    Level,
    Override,
    RegionKind,
    TrustComponents,
)
from guard_core.plugins import AdapterRegistry, hookimpl
from guard_core.ports import PolicyInput, Vote

RUN_ALL_OVERRIDES = frozenset(
    {"test_files", "environment", "no_evidence", "unreadable_change", "stale_graph"}
)
"""Override kinds that force run-all; the others widen the selection without forcing it."""


def level_for(trust: float, subset: float, medium: float) -> Level:
    if trust >= subset:
        return Level.SUBSET
    if trust >= medium:
        return Level.MEDIUM
    return Level.RUN_ALL


def _judged(data: PolicyInput, functions_only: bool = False) -> list[str]:
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
        out.append(Override("unreadable_change", problem))
    if data.environment_changed:
        out.append(Override("environment", data.environment_changed))
    touched = [f.path for f in cs.files if f.role in (FileRole.TEST, FileRole.CONFTEST)]
    if touched:
        out.append(Override("test_files", "test files changed: " + ", ".join(sorted(touched))))
    env_files = [f.path for f in cs.files if f.role is FileRole.ENVIRONMENT]
    if env_files:
        out.append(
            Override("environment", "environment files changed: " + ", ".join(sorted(env_files)))
        )
    data_paths = [p for f in cs.files if f.role is FileRole.DATA
                  for p in (f.path, f.old_path) if p]  # fmt: skip
    for fid in [*_judged(data), *data_paths]:
        if data.evidence.get(fid):
            continue
        if not data.seed_policy and fid in data.unexercised:
            continue  # a complete, fresh ingest saw no test run it: evidence of absence
        out.append(Override("no_evidence", f"{fid} has no coverage evidence"))
    if data.widening:
        for r in cs.regions:
            if r.dynamic_dispatch:
                out.append(
                    Override(
                        "dynamic_widening",
                        f"{r.id} uses dynamic dispatch; widening to the tests of {r.file}",
                    )
                )
    return out


def trust_components(data: PolicyInput) -> TrustComponents:
    """The three terms, as the seed defines them.

    EvidenceRatio: mean of the best covering-edge confidence per changed function (0 without
    edges; 1 for a function the ingest proved unexercised). Freshness: share of evidence edges
    verified at the commit the diff is taken against. UncertainRatio: share of changed
    functions with dynamic dispatch.
    """
    judged = _judged(data, functions_only=True)
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
        overrides = tuple(hard_overrides(data))
        components = trust_components(data)
        trust = components.trust
        level = level_for(trust, data.subset_threshold, data.medium_threshold)
        if any(o.kind in RUN_ALL_OVERRIDES for o in overrides):
            level = Level.RUN_ALL
        return Vote(
            level=level, trust=trust, components=components, overrides=overrides, policy=self.name
        )


@hookimpl
def guard_register_adapters(registry: AdapterRegistry) -> None:
    registry.add_trust_policy("default", lambda _settings: DefaultTrustPolicy())
