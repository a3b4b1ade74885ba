"""The decision's selection rules, in the order they run.

A rule reads the change, the evidence and the settings (one :class:`RuleInput`) and adds
tests to a :class:`~guard_core.selection.Selection`, each with a :class:`Reason`; it may also
add overrides (a widening, or run-all). A rule never removes anything, so the rules' order
changes the reasons' order only, never what is selected. Plug-ins add rules of their own
through the ``guard_selection_rules`` hook; they run after these, on the same terms.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import attrs

from guard_core.config import Settings
from guard_core.model import ChangeSet, CoverEdge, IngestInfo
from guard_core.ports import EvidenceReader, PolicyInput
from guard_core.selection import ReadGate, Selection


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

    @property
    def refined(self) -> bool:
        """Whether Guard's refinements of the seed's policy apply (off in that ablation)."""
        return not self.settings.seed_policy

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


def builtin_rules() -> tuple[Rule, ...]:
    """The built-in rules, in order (imported here: each module imports this one)."""
    from guard_core.rules.calls import CALL_RULES
    from guard_core.rules.code import CODE_RULES
    from guard_core.rules.files import FILE_RULES

    return (*CODE_RULES, *FILE_RULES, *CALL_RULES)


__all__ = ["Rule", "RuleInput", "builtin_rules", "run_rules"]
