"""Write ``reports/<target>.md`` (tables), ``<target>.json`` (raw) and ``<target>.png`` (plot)."""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from evals.metrics import Summary
from evals.runner import TargetResult

REPORTS = Path(__file__).resolve().parent.parent / "reports"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _ms(x: float | None) -> str:
    return "in run" if x is None else f"{1000 * x:.0f}"


PEERS = ("guard", "coverage", "testmon")  # side by side in the per-class and per-edit tables


def peers(result: TargetResult) -> list[str]:
    present = {s.strategy for s in result.summaries}
    return [p for p in PEERS if p in present]


WHOLE_SUITE = 0.05  # a selection that saves at most this share of test time is the suite


def by_class(rows: Sequence[dict[str, Any]], strategies: Sequence[str]) -> list[dict[str, Any]]:
    """Per edit class (an edit's id without its target and number: its kind), and over all
    edits last: mean test-time savings, failing-test recall and escapes per strategy."""
    return by_group(rows, strategies, "kind")


SPLITS = ("dev", "held-out", "fresh", "real-bug")


def by_split(rows: Sequence[dict[str, Any]], strategies: Sequence[str]) -> list[dict[str, Any]]:
    """:func:`by_class` per split (dev, held-out, fresh), never pooled but in the last row."""
    table = by_group(rows, strategies, "split")
    order = {name: i for i, name in enumerate((*SPLITS, "all"))}
    return sorted(table, key=lambda e: order.get(e["class"], len(order)))


def by_group(
    rows: Sequence[dict[str, Any]], strategies: Sequence[str], key: str
) -> list[dict[str, Any]]:
    """Per value of ``key`` in the rows, and over all edits last: mean test-time savings,
    failing-test recall, escapes, run-all decisions and whole-suite selections (whatever
    their level: at most 5% of the suite's test time saved) per strategy."""
    kinds = sorted({r[key] for r in rows})
    groups = {kind: [r for r in rows if r[key] == kind] for kind in kinds}
    if rows:
        groups["all"] = list(rows)
    table = []
    for kind, group in groups.items():
        failing = sum(r["failing"] for r in group)
        entry: dict[str, Any] = {
            "class": kind,
            "edits": len(group),
            "killable": sum(r["failing"] > 0 for r in group),
            "failing": failing,
            "strategies": {},
        }
        for name in strategies:
            missed = [len(r["missed"].get(name, ())) for r in group]
            entry["strategies"][name] = {
                "savings": statistics.fmean(r["savings"][name] for r in group),
                "recall": (failing - sum(missed)) / failing if failing else None,
                "escapes": sum(m > 0 for m in missed),
                "silent": sum(
                    m > 0 and m == r["failing"] for m, r in zip(missed, group, strict=True)
                ),
                "run_all": sum(r["sizes"][name] is None for r in group),
                "whole_suite": sum(r["savings"][name] <= WHOLE_SUITE for r in group),
            }
        table.append(entry)
    return table


def _class_markdown(result: TargetResult) -> list[str]:
    names = peers(result)
    head = [f"{n} savings" for n in names] + [f"{n} recall" for n in names]
    head += [f"{n} escapes" for n in names]
    lines = [
        "## Per edit class",
        "",
        "Mean test-time savings, failing-test recall and escaped edits (silent ones in "
        "brackets) per class of edit, Guard beside the plain per-test coverage selector"
        + (" and pytest-testmon" if "testmon" in names else "")
        + ": what each rule that selects more costs, and what it caught.",
        "",
        "| class | edits | killable | " + " | ".join(head) + " |",
        "| --- | ---: | ---: | " + " | ".join("---:" for _ in head) + " |",
    ]
    for entry in by_class(result.rows, names):
        cells = [_pct(entry["strategies"][n]["savings"]) for n in names]
        cells += [
            "—" if (r := entry["strategies"][n]["recall"]) is None else _pct(r) for n in names
        ]
        for n in names:
            e = entry["strategies"][n]
            cells.append(f"{e['escapes']}" + (f" ({e['silent']})" if e["silent"] else ""))
        name = "**all**" if entry["class"] == "all" else entry["class"]
        lines.append(
            f"| {name} | {entry['edits']} | {entry['killable']} | " + " | ".join(cells) + " |"
        )
    return [*lines, ""]


def _split_markdown(result: TargetResult) -> list[str]:
    names = peers(result)
    kept = ("savings", "safe savings", "escapes", "whole suite")
    head = [f"{n} {m}" for m in kept for n in names]
    lines = [
        "## Per split",
        "",
        "Dev edits are the ones Guard was tuned on; held-out and fresh edits (drawn from a new "
        "seed at run time) it never was: the gap between them is what the tuning does not "
        "carry over. *Whole suite*: selections that save at most 5% of the suite's test time, "
        "whatever their level (run-all decisions are among them). *Safe savings*: the mean "
        "over the edits on which that strategy missed no failing test (an escape saves test "
        "time by not running what fails).",
        "",
        "| split | edits | killable | " + " | ".join(head) + " |",
        "| --- | ---: | ---: | " + " | ".join("---:" for _ in head) + " |",
    ]
    table = by_split(result.rows, names)
    for entry in table:
        split = [r for r in result.rows if entry["class"] in ("all", r["split"])]
        cells = [_pct(entry["strategies"][n]["savings"]) for n in names]
        cells += [_safe_savings(split, n) for n in names]
        cells += [str(entry["strategies"][n]["escapes"]) for n in names]
        cells += [str(entry["strategies"][n]["whole_suite"]) for n in names]
        name = "**all**" if entry["class"] == "all" else entry["class"]
        lines.append(
            f"| {name} | {entry['edits']} | {entry['killable']} | " + " | ".join(cells) + " |"
        )
    found = {e["class"]: e for e in table}
    if "dev" in found and "fresh" in found:
        dev, fresh = found["dev"]["strategies"], found["fresh"]["strategies"]
        gaps = [f"{n} {100 * (dev[n]['savings'] - fresh[n]['savings']):+.1f} points" for n in names]
        lines += ["", "Generalization gap (dev minus fresh savings): " + ", ".join(gaps) + "."]
    return [*lines, ""]


def _safe_savings(rows: Sequence[dict[str, Any]], strategy: str) -> str:
    safe = [r["savings"][strategy] for r in rows if not r["missed"].get(strategy)]
    return _pct(statistics.fmean(safe)) if safe else "—"


def _size(row: dict[str, Any], strategy: str) -> str:
    size = row["sizes"].get(strategy, "n/a")
    cell = "all" if size is None else str(size)
    missed = len(row["missed"].get(strategy, ()))
    return cell + (f" ✗{missed}" if missed else "")


def stamp(result: TargetResult, head_tree: str) -> str:
    """The report's first line: the commit measured, whether it held still through the run,
    and whether its src/ is HEAD's (``head_tree``: HEAD's src/ tree when written)."""
    commit = result.guard_commit or "unknown"
    still = (
        "unchanged through the run"
        if result.guard_commit_end == commit
        else f"**changed during the run** (to `{result.guard_commit_end or 'unknown'}`)"
    )
    same = result.src_tree and result.src_tree == head_tree
    return (
        f"Guard `{commit}`, src/ tree `{result.src_tree or 'unknown'}`, {still}; "
        + ("= HEAD's src/ when written." if same else "**≠ HEAD's src/ when written**.")
        + " `python -m evals verify` checks this report against its JSON and today's HEAD."
    )


def markdown(result: TargetResult, title: str, head_tree: str) -> str:
    lines = [
        stamp(result, head_tree),
        "",
        f"# {title}",
        "",
        f"Measured: Guard commit `{result.guard_commit or 'unknown'}`; split `evals/split.json` "
        f"sha256 `{result.split_sha256 or 'unknown'}`; these edits (id and diff, in order) "
        f"sha256 `{result.edits_sha256 or 'unknown'}`. Protocol: `evals/PLAN.md`.",
        "",
        f"{result.tests} test functions; whole suite {result.suite_seconds:.1f} s; Guard ingest "
        f"(static + per-test evidence) {result.ingest_seconds:.1f} s. "
        f"{len(result.rows)} edits, {sum(r['failing'] > 0 for r in result.rows)} killable "
        f"(make at least one test fail under run-all). Python {result.python or 'unknown'} "
        "drives the harness; the target runs in its own venv. Truth by agreement: the whole "
        "suite ran twice per edit (as the target runs, then serially in file order); a test "
        "fails when it failed in both."
        + (
            f" Left out, their whole suite did not finish: {', '.join(result.timed_out)}."
            if result.timed_out
            else ""
        ),
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
        *_split_markdown(result),
        *_class_markdown(result),
        "## Per edit",
        "",
        "Tests selected per strategy (`all`: the whole suite; `✗n`: n failing tests not selected).",
        "",
    ]
    names = peers(result) + [s.strategy for s in result.summaries if s.strategy not in PEERS]
    lines += [
        "| edit | kind | split | failing | " + " | ".join(names) + " |",
        "| --- | --- | --- | ---: | " + " | ".join("---:" for _ in names) + " |",
    ]
    for row in result.rows:
        lines.append(
            f"| {row['edit']} | {row['kind']} | {row['split']} | {row['failing']} | "
            + " | ".join(_size(row, n) for n in names)
            + " |"
        )
    kinds = Counter(r["kind"] for r in result.rows)
    lines += ["", "Edit kinds: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())), ""]
    return "\n".join([*lines, *_unstable_markdown(result, names)])


def _unstable_markdown(result: TargetResult, names: Sequence[str]) -> list[str]:
    if not result.unstable:
        return []
    lines = [
        "## Unstable edits",
        "",
        "Edits whose two whole-suite runs failed different tests: kept out of every figure "
        "above, judged here against what failed in either run (`✗n`: n of those not selected).",
        "",
        "| edit | kind | split | failing, as run | failing, in order | " + " | ".join(names) + " |",
        "| --- | --- | --- | ---: | ---: | " + " | ".join("---:" for _ in names) + " |",
    ]
    for row in result.unstable:
        first, second = row["runs"]
        lines.append(
            f"| {row['edit']} | {row['kind']} | {row['split']} | {len(first)} | {len(second)} | "
            + " | ".join(_size(row, n) for n in names)
            + " |"
        )
    return [*lines, ""]


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


def write(result: TargetResult, title: str, out: Path = REPORTS, name: str | None = None) -> Path:
    """``<name>.md``, ``.json`` and ``.png`` in ``out`` (``name``: the target's by default);
    the markdown is a function of the JSON (``evals verify`` regenerates it)."""
    from evals.runner import src_tree

    name = name or result.target
    out.mkdir(parents=True, exist_ok=True)
    raw = {
        **attrs.asdict(result),
        "title": title,
        "head_src_tree": src_tree("HEAD"),
        "classes": by_class(result.rows, peers(result)),
        "splits": by_split(result.rows, peers(result)),
    }
    (out / f"{name}.json").write_text(
        json.dumps(raw, indent=1, default=sorted) + "\n", encoding="utf-8"
    )
    (out / f"{name}.md").write_text(rendered(raw), encoding="utf-8")
    plot(result, out / f"{name}.png")
    return out / f"{name}.md"


def from_json(raw: dict[str, Any]) -> TargetResult:
    fields = {f.name for f in attrs.fields(TargetResult)}
    data = {k: v for k, v in raw.items() if k in fields}
    data["summaries"] = tuple(
        Summary(
            **{
                **s,
                "escaped_edits": tuple(s["escaped_edits"]),
                "silent_edits": tuple(s["silent_edits"]),
            }
        )
        for s in raw["summaries"]
    )
    for key in ("rows", "timed_out", "unstable"):
        data[key] = tuple(raw.get(key, ()))
    return TargetResult(**data)


def rendered(raw: dict[str, Any]) -> str:
    """The markdown report of a report's JSON."""
    return markdown(from_json(raw), raw["title"], raw["head_src_tree"])
