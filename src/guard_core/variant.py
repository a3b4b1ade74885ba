"""Guard with one of its refinements switched off: how the evaluation harness measures what each
refinement buys (``evals/strategies.py``). No configuration key, variable or command sets one;
a check runs :data:`DEFAULT` unless the harness hands its engine another."""

from __future__ import annotations

import attrs

from guard_core.model import ChangeSet, FileRole


@attrs.frozen
class Variant:
    use_confidence: bool = True  # off: every edge counts as certain
    widening: bool = True  # off: no widening to a module's tests on dynamic dispatch
    line_evidence: bool = True  # off: every test of a changed function, not those that ran the edit
    seed_policy: bool = False  # on: the published policy, without Guard's refinements

    def sliced(self, change: ChangeSet) -> ChangeSet:
        """The change as this variant's slicer sees it: the seed's reads only source files'
        regions (a changed test module or conftest is a file, and runs everything)."""
        if not self.seed_policy:
            return change
        source = {f.path for f in change.files if f.role is FileRole.SOURCE}
        regions = tuple(r for r in change.regions if r.file in source)
        return attrs.evolve(change, regions=regions)


DEFAULT = Variant()
