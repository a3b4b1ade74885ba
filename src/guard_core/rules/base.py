"""What a selection rule is and what it reads (:class:`RuleInput`); the list of rules is in
:mod:`guard_core.rules`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import attrs

from guard_core.config import Settings
from guard_core.model import ChangeSet, CoverEdge, IngestInfo
from guard_core.ports import EvidenceReader, PolicyInput
from guard_core.selection import ReadGate, Selection
from guard_core.variant import DEFAULT, Variant


@attrs.frozen
class RuleInput:
    """What every rule reads: the change, the evidence of its changed ids, and the settings."""

    change: ChangeSet
    store: EvidenceReader
    settings: Settings
    info: IngestInfo
    evidence: Mapping[str, Sequence[CoverEdge]]  # changed id, data file or folder -> edges
    data_files: tuple[str, ...]  # changed data files, old paths too
    listed: tuple[str, ...]  # folders whose listing the change alters ("a/b/")
    policy: PolicyInput
    # recorded lines are base-side lines only when the diff starts at the evidence commit
    lines_apply: bool = False
    gate: ReadGate = attrs.field(factory=lambda: ReadGate(False))
    open_classes: frozenset[str] = frozenset()
    # when ``store`` leaves out what tests reached only through imports (replayed by the
    # import probe): the evidence with those edges, for what an import replay cannot show
    with_import_edges: EvidenceReader | None = None
    variant: Variant = DEFAULT  # the harness's, to measure a refinement by its absence

    @property
    def refined(self) -> bool:
        """Whether Guard's refinements of the seed's policy apply (off in that ablation)."""
        return not self.variant.seed_policy

    @property
    def floor(self) -> float:
        return self.settings.min_confidence


@attrs.frozen
class Rule:
    """One selection rule: a name for logs and docs, and the function that adds tests."""

    name: str
    select: Callable[[RuleInput, Selection], None]
    refinement: bool = True  # not part of the seed's policy: skipped in its ablation

    def applies(self, data: RuleInput) -> bool:
        return data.refined or not self.refinement


def run_rules(data: RuleInput, selection: Selection, rules: Sequence[Rule]) -> None:
    """Every rule that applies, in order."""
    for rule in rules:
        if rule.applies(data):
            rule.select(data, selection)
