"""``python -m evals [run] [--target T] [--split S] [--limit N]`` · ``python -m evals generate``."""

from __future__ import annotations

import time
from pathlib import Path

import click

from evals.edits import SPLIT, load_split, save_split
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
    from evals.fresh import fresh_edits
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


@cli.command()
@click.option("--target", "targets", multiple=True, default=("flask", "astroid"),
              type=click.Choice(sorted(TARGETS)))  # fmt: skip
def explain(targets: tuple[str, ...]) -> None:
    """Replay Guard's misses from the cached truth; append the table to reports/<target>.md."""
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
        path = report.REPORTS / f"{name}.md"
        if path.exists():
            body = path.read_text().split("## Guard's misses")[0].rstrip("\n")
            path.write_text(body + "\n\n" + text, encoding="utf-8")


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
