"""Fresh edits: the frozen generator run again from a seed given at run time, so that every
rule is also judged on edits nobody has seen (nor tuned on). They are never written to
``split.json``; their ids say their seed (``flask-fresh7-rename-2``) and their split is
``fresh``."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from evals.edits import Edit
from evals.generate import generate
from evals.targets import Prepared


def spread(edits: Sequence[Edit], count: int) -> list[Edit]:
    """At most ``count`` edits, one kind after another in turn (each kind in its own order),
    so that a small sample still holds every kind."""
    by_kind: dict[str, list[Edit]] = {}
    for edit in edits:
        by_kind.setdefault(edit.kind, []).append(edit)
    chosen: list[Edit] = []
    while len(chosen) < count and any(by_kind.values()):
        for queue in by_kind.values():
            if queue and len(chosen) < count:
                chosen.append(queue.pop(0))
    return chosen


def fresh_edits(prepared: Prepared, count: int, seed: int) -> list[Edit]:
    """``count`` new edits of ``prepared``'s target, drawn with ``seed`` (every kind the
    generator knows, in turn)."""
    made = generate(prepared, seed)
    renamed = [
        attrs.evolve(
            e,
            id=e.id.replace(f"{e.target}-", f"{e.target}-fresh{seed}-", 1),
            split="fresh",
        )
        for e in made
    ]
    return spread(renamed, count)
