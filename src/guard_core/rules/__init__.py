"""The decision's selection rules, in the order they run.

A rule reads the change, the evidence and the settings (one :class:`RuleInput`) and adds
tests to a :class:`~guard_core.selection.Selection`, each with a :class:`Reason`; it may also
add overrides (a widening, or run-all). A rule never removes anything, so the rules' order
changes the reasons' order only, never what is selected. Plug-ins add rules of their own
through the ``guard_selection_rules`` hook; they run after these, on the same terms.
"""

from __future__ import annotations

from guard_core.rules.base import Rule, RuleInput, run_rules
from guard_core.rules.calls import CALL_RULES
from guard_core.rules.code import CODE_RULES
from guard_core.rules.files import FILE_RULES

BUILTIN_RULES: tuple[Rule, ...] = (*CODE_RULES, *FILE_RULES, *CALL_RULES)
"""The built-in rules, in the order they run."""


def builtin_rules() -> tuple[Rule, ...]:
    return BUILTIN_RULES


__all__ = ["BUILTIN_RULES", "Rule", "RuleInput", "builtin_rules", "run_rules"]
