"""``python -m evals [run] [--target T] [--split S] [--limit N]`` · ``all`` · ``verify`` ·
``generate`` · ``explain``."""

from __future__ import annotations

import time
from pathlib import Path

import attrs
import click

from evals.edits import SPLIT, load_split, save_split
from evals.fresh import fresh_edits
from evals.runner import TargetResult
from evals.targets import TARGETS, prepare

SEED = 20261129


@click.group(invoke_without_command=True)
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Guard's evaluation harness."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(run)


@cli.command()
@click.option(
    "--target",
    "targets",
    multiple=True,
    default=("flask", "astroid"),
    type=click.Choice(sorted(TARGETS)),
    show_default=True,
)
@click.option(
    "--split", "split", type=click.Choice(["dev", "held-out", "all", "none"]), default="all"
)
@click.option("--limit", type=int, default=None, help="N edits per target, spread over the kinds")
@click.option("--fresh", type=int, default=0, help="N fresh edits per target, from --seed")
@click.option("--seed", type=int, default=None, help="the fresh edits' seed (default: random)")
@click.option("--fresh-truth", is_flag=True, help="recompute the ground truth (a suite per edit)")
@click.option("--no-testmon", is_flag=True)
@click.option("--out", type=click.Path(path_type=Path), default=None, help="reports folder")
def run(
    targets: tuple[str, ...],
    split: str,
    limit: int | None,
    fresh: int,
    seed: int | None,
    fresh_truth: bool,
    no_testmon: bool,
    out: Path | None,
) -> None:
    """Evaluate every strategy on the frozen edits (and ``--fresh N`` new ones drawn from
    ``--seed``) and write reports/<target>.md."""
    import random

    from evals import report
    from evals.runner import evaluate

    edits = load_split()
    if fresh and seed is None:
        seed = random.SystemRandom().randrange(1, 10**6)
    for name in targets:
        chosen = [e for e in edits if e.target == name and split in ("all", e.split)]
        if limit is not None and len(chosen) > limit:
            chosen = chosen[:: -(-len(chosen) // limit)][:limit]
        if fresh:
            assert seed is not None
            chosen += fresh_edits(prepare(TARGETS[name]), fresh, seed)
        started = time.perf_counter()
        result = evaluate(name, chosen, fresh_truth=fresh_truth, testmon=not no_testmon)
        drawn = f", {fresh} fresh from seed {seed}" if fresh else ""
        title = f"{TARGETS[name].spec}: {len(chosen)} edits ({split}{drawn})"
        path = report.write(result, title, out or report.REPORTS)
        click.echo(path.read_text().split("## Per edit")[0])
        click.echo(f"[{name}] done in {time.perf_counter() - started:.0f} s -> {path}")


@attrs.frozen
class Planned:
    """One report of ``evals all``."""

    report: str
    target: str  # a target of targets.py, or with split "real-bug" a project of bugs.py
    split: str = "all"
    fresh: int = 0
    seed: int | None = None


# every report in reports/: the frozen splits of each target, and fresh edits from fixed seeds
PLANNED = (
    Planned("flask", "flask", fresh=40, seed=101),
    Planned("flask-fresh202", "flask", "none", 40, 202),
    Planned("flask-fresh303", "flask", "none", 40, 303),
    Planned("itsdangerous", "itsdangerous"),
    Planned("toolz", "toolz"),
    Planned("sqlparse", "sqlparse", fresh=40, seed=101),
    Planned("more-itertools", "more-itertools"),
    Planned("astroid", "astroid"),
    Planned("astroid-fresh101", "astroid", "none", 40, 101),
    Planned("sqlparse-bugs", "sqlparse", "real-bug"),
    Planned("click-bugs", "click", "real-bug"),
    Planned("jinja-bugs", "jinja", "real-bug"),
)


@cli.command(name="all")
@click.option("--report", "only", multiple=True, type=click.Choice([p.report for p in PLANNED]),
              help="regenerate only these reports (default: every one)")  # fmt: skip
@click.option("--out", type=click.Path(path_type=Path), default=None, help="reports folder")
def all_reports(only: tuple[str, ...], out: Path | None) -> None:
    """Regenerate the reports at one clean commit: refuses a dirty tree, and refuses to write
    a report when the commit changed while it ran."""
    from evals import report
    from evals.integrity import DirtyTree, clean_head

    try:
        start = clean_head()  # the truth cache too: a run replays it
    except DirtyTree as exc:
        raise click.ClickException(
            f"{exc}\ncommit first: a dirty tree's figures are no result"
        ) from None
    for plan in PLANNED:
        if only and plan.report not in only:
            continue
        started = time.perf_counter()
        measured = _measure_planned(plan)
        if measured is None:
            continue
        result, what = measured
        try:
            end = clean_head(truth=False)  # the run adds truth
        except DirtyTree as exc:
            raise click.ClickException(
                f"{plan.report}: not written, the tree changed: {exc}"
            ) from None
        if end != start:
            raise click.ClickException(f"{plan.report}: not written, HEAD moved to {end}")
        command = "python -m evals all" + ("" if not only else f" --report {plan.report}")
        path = report.write(result, f"{what} (`{command}`)", out or report.REPORTS, plan.report)
        click.echo(f"[{plan.report}] done in {time.perf_counter() - started:.0f} s -> {path}")


def _measure_planned(plan: Planned) -> tuple[TargetResult, str] | None:
    """The result of one planned report and what it measured (None: nothing to measure)."""
    from evals.bugs import PROJECTS, evaluate_bugs, load_bugs
    from evals.runner import evaluate

    if plan.split == "real-bug":
        bugs = [b for b in load_bugs() if b.project == plan.target]
        if not bugs:
            return None
        return evaluate_bugs(PROJECTS[plan.target], bugs), f"{plan.target}: {len(bugs)} real bugs"
    chosen = [e for e in load_split() if e.target == plan.target and plan.split in ("all", e.split)]
    if plan.fresh:
        assert plan.seed is not None
        chosen += fresh_edits(prepare(TARGETS[plan.target]), plan.fresh, plan.seed)
    drawn = f", {plan.fresh} fresh from seed {plan.seed}" if plan.fresh else ""
    what = f"{TARGETS[plan.target].spec}: {len(chosen)} edits ({plan.split}{drawn})"
    return evaluate(plan.target, chosen), what


@cli.group()
def bugs() -> None:
    """Real bugs: fixes from a project's history, re-introduced (evals/bugs.py)."""


@bugs.command(name="find")
@click.option("--project", "projects", multiple=True, default=("sqlparse", "click", "jinja"))
@click.option("--count", type=int, default=8, help="new verified bugs per project")
def find_bugs(projects: tuple[str, ...], count: int) -> None:
    """Verify new bugs (their revert fails tests in two runs) and add them to bugs.json."""
    from evals.bugs import PROJECTS, find, load_bugs, save_bugs

    known = load_bugs()
    for name in projects:
        click.echo(f"[{name}]")
        known += find(PROJECTS[name], count, known, click.echo)
        save_bugs(known)
    click.echo(f"{len(known)} bugs in evals/bugs.json")


@bugs.command(name="run")
@click.option("--project", "projects", multiple=True, default=("sqlparse", "click", "jinja"))
@click.option("--fresh-truth", is_flag=True, help="recompute the ground truth")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="reports folder")
def run_bugs(projects: tuple[str, ...], fresh_truth: bool, out: Path | None) -> None:
    """Every strategy on each verified bug: reports/<project>-bugs.md."""
    from evals import report
    from evals.bugs import PROJECTS, evaluate_bugs, load_bugs

    for name in projects:
        chosen = [b for b in load_bugs() if b.project == name]
        result = evaluate_bugs(PROJECTS[name], chosen, fresh_truth=fresh_truth)
        title = f"{name}: {len(chosen)} real bugs (`python -m evals bugs run --project {name}`)"
        path = report.write(result, title, out or report.REPORTS, f"{name}-bugs")
        click.echo(path.read_text().split("## Per edit")[0])


@cli.command()
@click.option("--at-head", is_flag=True, help="also fail a report whose src/ is not HEAD's")
@click.option("--render", is_flag=True,
              help="first rewrite the markdown from the JSON")  # fmt: skip
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
def verify(at_head: bool, render: bool, paths: tuple[Path, ...]) -> None:
    """Re-check reports (default: every reports/*.json) against their JSON, the split of their
    commit and their rows; exit 1 on any problem."""
    import json

    from evals import report
    from evals.integrity import verify_all

    chosen = paths or tuple(report.REPORTS.glob("*.json"))
    if render:
        for path in chosen:
            raw = json.loads(path.read_text(encoding="utf-8"))
            path.with_suffix(".md").write_text(report.rendered(raw), encoding="utf-8")
    verdicts = verify_all(chosen)
    click.echo(f"{len(verdicts)} reports")
    missing = [p.report for p in PLANNED if not (report.REPORTS / f"{p.report}.json").exists()]
    if not paths and missing:
        click.echo(f"planned but not in reports/ (not measured yet): {', '.join(missing)}")
    failed = False
    for v in verdicts:
        stale = at_head and not v.at_head
        failed |= bool(v.problems) or stale
        state = "ok" if not v.problems else "FAILED"
        click.echo(f"{v.report}: {state}; src/ {'=' if v.at_head else '≠'} HEAD's src/")
        for problem in v.problems:
            click.echo(f"  - {problem}")
    if failed:
        raise SystemExit(1)


@cli.command()
@click.option("--target", "targets", multiple=True, default=("flask", "astroid"),
              type=click.Choice(sorted(TARGETS)))  # fmt: skip
def explain(targets: tuple[str, ...]) -> None:
    """Replay Guard's misses from the cached truth into reports/<target>-misses.md."""
    from evals import report
    from evals.explain import explain as replay
    from evals.explain import markdown
    from evals.truth import TruthCache

    edits = load_split()
    for name in targets:
        prepared = prepare(TARGETS[name])
        cache = TruthCache(prepared, fresh=False)
        chosen = [e for e in edits if e.target == name]
        failing = {e.id: t.failing for e in chosen if (t := cache.get(e)) is not None}
        text = markdown(replay(prepared, chosen, failing))
        click.echo(text)
        # beside the report, not in it: a report is a function of its JSON
        (report.REPORTS / f"{name}-misses.md").write_text(text, encoding="utf-8")


@cli.command()
@click.option("--target", "targets", multiple=True, default=tuple(sorted(TARGETS)))
def generate(targets: tuple[str, ...]) -> None:
    """Regenerate split.json (seeded); commit the result."""
    from evals.generate import generate as make

    old = load_split() if SPLIT.exists() else []
    by_target = {e.target: [x for x in old if x.target == e.target] for e in old}
    for name in targets:  # regenerated in place: the other targets' edits and order stay
        by_target[name] = make(prepare(TARGETS[name]), SEED)
        click.echo(f"{name}: {len(by_target[name])} edits")
    save_split([e for edits in by_target.values() for e in edits], SEED)


if __name__ == "__main__":
    cli()
