"""Paired metrics over edits: pure functions of selections, ground truth and durations."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import attrs


@attrs.frozen
class Outcome:
    """One strategy on one edit."""

    edit: str
    selected: frozenset[str] | None  # None: the whole suite
    failing: frozenset[str]  # ground truth: tests the edit makes fail
    latency: float | None  # seconds to decide (None: decided while running, as testmon)
    wall: float  # seconds to decide and run the selection
    wall_measured: bool

    def escaped(self) -> frozenset[str]:
        return frozenset() if self.selected is None else self.failing - self.selected

    def silent(self) -> bool:
        """The breakage goes unseen: the edit breaks tests and none of them is selected."""
        return (
            bool(self.failing) and self.selected is not None and not (self.failing & self.selected)
        )


def time_saved(selected: frozenset[str] | None, seconds: dict[str, float]) -> float:
    """1 - the selected tests' baseline seconds / the whole suite's (0 for the whole suite)."""
    if selected is None:
        return 0.0
    total = sum(seconds.values()) or 1.0
    return 1 - sum(seconds.get(t, 0.0) for t in selected) / total


@attrs.frozen
class Summary:
    strategy: str
    edits: int
    killable: int
    escaped_edits: tuple[str, ...]  # a failing test was not selected
    silent_edits: tuple[str, ...]  # no failing test was selected: the breakage goes unseen
    recall: float
    fallback_rate: float
    test_time_savings: float
    wall_savings: float
    latency_p50: float | None
    latency_max: float | None
    wall_measured: bool

    @property
    def escape_rate(self) -> float:
        return len(self.escaped_edits) / self.killable if self.killable else 0.0


def summarise(
    strategy: str,
    outcomes: Sequence[Outcome],
    seconds: dict[str, float],
    run_all_wall: dict[str, float],
) -> Summary:
    """``seconds``: baseline duration per test; ``run_all_wall``: the whole suite's wall time
    per edit (the denominator of wall savings)."""
    killable = [o for o in outcomes if o.failing]
    failing = sum(len(o.failing) for o in killable)
    caught = sum(len(o.failing) - len(o.escaped()) for o in killable)

    latencies = [o.latency for o in outcomes if o.latency is not None]
    return Summary(
        strategy=strategy,
        edits=len(outcomes),
        killable=len(killable),
        escaped_edits=tuple(o.edit for o in killable if o.escaped()),
        silent_edits=tuple(o.edit for o in killable if o.silent()),
        recall=caught / failing if failing else 1.0,
        fallback_rate=sum(o.selected is None for o in outcomes) / max(len(outcomes), 1),
        test_time_savings=statistics.fmean(time_saved(o.selected, seconds) for o in outcomes)
        if outcomes
        else 0.0,
        wall_savings=statistics.fmean(1 - o.wall / run_all_wall[o.edit] for o in outcomes)
        if outcomes
        else 0.0,
        latency_p50=statistics.median(latencies) if latencies else None,
        latency_max=max(latencies) if latencies else None,
        wall_measured=all(o.wall_measured for o in outcomes),
    )
