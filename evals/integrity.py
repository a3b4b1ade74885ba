"""Can a report be trusted: measured at one clean commit, its markdown a function of its JSON,
its edits those of the split that commit held, its figures those of its rows."""

from __future__ import annotations

import hashlib
import json
import re
import statistics
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from evals.edits import Edit
from evals.runner import ROOT, edits_digest, src_tree


class DirtyTree(Exception):
    """Guard's code or harness has uncommitted changes: no run of it is a result."""


def clean_head(root: Path = ROOT, truth: bool = True) -> str:
    """HEAD, when ``src/``, ``evals/`` and the project's metadata are as committed;
    ``truth=False``: the truth cache (which a run itself writes) aside."""
    paths = ["src", "evals", "pyproject.toml", *(() if truth else (":(exclude)evals/truth",))]
    dirty = _git(root, "status", "--porcelain", "--", *paths)
    if dirty:
        raise DirtyTree("uncommitted changes in src/ or evals/:\n" + dirty)
    return _git(root, "rev-parse", "HEAD")


@attrs.frozen
class Verdict:
    report: str
    problems: tuple[str, ...]  # any one makes the report untrustworthy
    at_head: bool  # its src/ is HEAD's: it measures the Guard of today


def verify(path: Path, root: Path = ROOT) -> Verdict:
    """Re-check ``reports/<name>.json`` and its markdown beside it; a report that cannot be
    read is a problem, never a crash."""
    try:
        return _verify(path, root)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return Verdict(path.stem, (f"unreadable: {type(exc).__name__}: {exc}",), False)


def _verify(path: Path, root: Path) -> Verdict:
    from evals import report

    raw = json.loads(path.read_text(encoding="utf-8"))
    problems: list[str] = []
    commit = raw.get("guard_commit", "")
    if not commit or commit.endswith("+dirty"):
        problems.append(f"measured on a dirty or unknown tree ({commit or 'no commit'})")
    end = raw.get("guard_commit_end", "")
    if not end:
        problems.append("the commit at the run's end was not recorded")
    elif end != commit:
        problems.append(f"the tree changed during the run ({commit} -> {end})")
    sha = commit.removesuffix("+dirty")
    if _git(root, "cat-file", "-t", sha) != "commit":
        return Verdict(path.stem, (*problems, f"{sha} is not in this history"), False)
    if raw.get("src_tree") != src_tree(sha, root):
        problems.append("its src/ tree is not that of its commit")
    split = _show(root, sha, "evals/split.json")
    if hashlib.sha256(split).hexdigest() != raw.get("split_sha256"):
        problems.append("split_sha256 is not the split its commit held")
    bugs = {b["id"] for b in json.loads(_show(root, sha, "evals/bugs.json") or b"[]")}
    problems += _edit_problems(raw, json.loads(split or b"{}"), bugs)
    problems += _figure_problems(raw)
    problems += _table_problems(raw)
    if "title" not in raw or "head_src_tree" not in raw:
        problems.append("no title: the markdown cannot be regenerated from the JSON")
    elif path.with_suffix(".md").read_text(encoding="utf-8") != report.rendered(raw):
        problems.append(f"{path.with_suffix('.md').name} is not what its JSON renders")
    return Verdict(path.stem, tuple(problems), raw.get("src_tree") == src_tree("HEAD", root))


def _edit_problems(raw: dict[str, Any], split: dict[str, Any], bugs: set[str]) -> list[str]:
    """Every frozen edit measured is in the split of the report's commit, every real bug in its
    ``bugs.json``; with only frozen edits, ``edits_sha256`` is recomputed from that split."""
    frozen = {e["id"]: e for e in split.get("edits", ())}
    measured = [r["edit"] for r in (*raw["rows"], *raw.get("unstable", ()))]
    measured += list(raw.get("timed_out", ()))
    fresh = [e for e in measured if re.match(rf"{re.escape(raw['target'])}-fresh\d+-", e)]
    real = [e for e in measured if "-bug-" in e]
    unknown = [e for e in measured if e not in frozen and e not in fresh and e not in bugs]
    if unknown:
        return [f"edits neither in the split nor among the bugs: {', '.join(unknown[:5])}"]
    if fresh or real:  # their diffs are drawn at run time, or read from a mirror
        return []
    chosen = set(measured)
    ordered = [
        Edit(**{**e, "files": tuple(e["files"])})
        for e in split.get("edits", ())
        if e["id"] in chosen
    ]
    if edits_digest(ordered) != raw.get("edits_sha256"):
        return ["edits_sha256 is not that of its edits in the split"]
    return []


def _figure_problems(raw: dict[str, Any]) -> list[str]:
    """Each strategy's headline figures are those of its rows."""
    rows = raw["rows"]
    problems = []
    for summary in raw["summaries"]:
        name = summary["strategy"]
        mine = [r for r in rows if name in r["savings"]]
        if len(mine) != summary["edits"]:
            problems.append(f"{name}: {summary['edits']} edits, {len(mine)} rows")
            continue
        mean = sum(r["savings"][name] for r in mine) / len(mine) if mine else 0.0
        if abs(mean - summary["test_time_savings"]) > 1e-3:
            problems.append(f"{name}: savings {summary['test_time_savings']:.4f}, rows {mean:.4f}")
        killable = [r for r in mine if r["failing"]]
        escaped = sorted(r["edit"] for r in killable if r["missed"].get(name))
        silent = sorted(
            r["edit"] for r in killable if len(r["missed"].get(name, ())) == r["failing"]
        )
        run_all = sum(r["sizes"][name] is None for r in mine) / max(len(mine), 1)
        if escaped != sorted(summary["escaped_edits"]):
            problems.append(f"{name}: escaped edits differ from the rows'")
        if silent != sorted(summary["silent_edits"]):
            problems.append(f"{name}: silent escapes differ from the rows'")
        if len(killable) != summary["killable"] or abs(run_all - summary["fallback_rate"]) > 1e-9:
            problems.append(f"{name}: killable edits or fallback rate differ from the rows'")
        problems += _latency_problems(name, summary, mine)
    return problems


def _latency_problems(name: str, summary: dict[str, Any], rows: list[dict[str, Any]]) -> list[str]:
    """A strategy's decision latencies are those of its rows (reports from before rows kept
    their latency have nothing to check)."""
    if not rows or any("latency" not in r for r in rows):
        return []
    mine = [r["latency"][name] for r in rows if name in r["latency"]]
    p50, top = summary["latency_p50"], summary["latency_max"]
    if not mine:
        return [] if p50 is None else [f"{name}: latency {p50} but none in its rows"]
    if p50 is None or abs(statistics.median(mine) - p50) > 1e-3 or abs(max(mine) - top) > 1e-3:
        return [f"{name}: latency p50 / max differ from the rows'"]
    return []


def _table_problems(raw: dict[str, Any]) -> list[str]:
    """The per-class and per-split tables of the JSON are those of its rows."""
    from evals import report

    names = report.peers(report.from_json(raw))
    problems = []
    for key, table in (("classes", report.by_class), ("splits", report.by_split)):
        if raw.get(key) != json.loads(json.dumps(table(raw["rows"], names))):
            problems.append(f"its {key} table is not that of its rows")
    return problems


def verify_all(paths: Iterable[Path], root: Path = ROOT) -> list[Verdict]:
    return [verify(p, root) for p in sorted(paths)]


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          check=False).stdout.strip()  # fmt: skip


def _show(root: Path, commit: str, path: str) -> bytes:
    return subprocess.run(["git", "-C", str(root), "show", f"{commit}:{path}"],
                          capture_output=True, check=False).stdout  # fmt: skip
