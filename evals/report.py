"""Write ``reports/<target>.md`` (tables), ``<target>.json`` (raw) and ``<target>.png`` (plot)."""

from __future__ import annotations

import json
import platform
from collections import Counter
from pathlib import Path

import attrs

from evals.runner import TargetResult

REPORTS = Path(__file__).resolve().parent.parent / "reports"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _ms(x: float | None) -> str:
    return "in run" if x is None else f"{1000 * x:.0f}"


def markdown(result: TargetResult, title: str) -> str:
    lines = [
        f"# {title}",
        "",
        f"{result.tests} test functions; whole suite {result.suite_seconds:.1f} s; Guard ingest "
        f"(static + per-test evidence) {result.ingest_seconds:.1f} s. "
        f"{len(result.rows)} edits, {sum(r['failing'] > 0 for r in result.rows)} killable "
        f"(make at least one test fail under run-all). Python {platform.python_version()} "
        "drives the harness; the target runs in its own venv.",
        "",
        "| strategy | escaped / killable | escape rate | silent escapes | recall | fallback "
        "| test-time savings | wall savings | latency p50 / max (ms) | escaped edits |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in result.summaries:
        wall = _pct(s.wall_savings) + ("" if s.wall_measured else " (est.)")
        lines.append(
            f"| {s.strategy} | {len(s.escaped_edits)} / {s.killable} | {_pct(s.escape_rate)} "
            f"| {len(s.silent_edits)} | {_pct(s.recall)} | {_pct(s.fallback_rate)} "
            f"| {_pct(s.test_time_savings)} "
            f"| {wall} | {_ms(s.latency_p50)} / {_ms(s.latency_max)} "
            f"| {', '.join(s.escaped_edits) or '—'} |"
        )
    lines += [
        "",
        "An edit escapes when a test it makes fail (under run-all) is not selected; a *silent* "
        "escape selects none of its failing tests, so the breakage goes unseen. Wall savings "
        "marked (est.) are pytest's start-up plus the selected tests' baseline durations; "
        "`guard` and `testmon` wall times are measured by running their selections.",
        "",
        "## Per edit",
        "",
        "| edit | kind | split | failing | "
        + " | ".join(s.strategy for s in result.summaries)
        + " |",
        "| --- | --- | --- | --- | " + " | ".join("---" for _ in result.summaries) + " |",
    ]
    for row in result.rows:
        sizes = [
            ("all" if row["sizes"].get(s.strategy) is None else str(row["sizes"][s.strategy]))
            for s in result.summaries
        ]
        lines.append(
            f"| {row['edit']} | {row['kind']} | {row['split']} | {row['failing']} | "
            + " | ".join(sizes)
            + " |"
        )
    kinds = Counter(r["kind"] for r in result.rows)
    lines += ["", "Edit kinds: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())), ""]
    return "\n".join(lines)


def plot(result: TargetResult, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for s in result.summaries:
        ax.scatter(100 * s.escape_rate, 100 * s.test_time_savings, s=60)
        ax.annotate(
            s.strategy,
            (100 * s.escape_rate, 100 * s.test_time_savings),
            textcoords="offset points",
            xytext=(6, 4),
            fontsize=8,
        )
    ax.set_xlabel("escape rate over killable edits (%)")
    ax.set_ylabel("test-time savings (%)")
    ax.set_title(f"{result.target}: savings against escapes per strategy")
    ax.set_xlim(-3, 103)
    ax.set_ylim(-3, 103)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write(result: TargetResult, title: str, out: Path = REPORTS) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{result.target}.md").write_text(markdown(result, title), encoding="utf-8")
    (out / f"{result.target}.json").write_text(
        json.dumps(attrs.asdict(result), indent=1, default=sorted) + "\n", encoding="utf-8"
    )
    plot(result, out / f"{result.target}.png")
    return out / f"{result.target}.md"
