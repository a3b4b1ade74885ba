"""The ingest commands: ``guard ingest-static`` (the static index) and ``guard ingest-coverage``
(what each test executed)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from guard_adapters.cli.group import emit_json, guard, handle_errors, python_option

if TYPE_CHECKING:
    from guard_core.api import Guard

repo_argument = click.argument(
    "repo", type=click.Path(exists=True, file_okay=False, path_type=Path), default="."
)


@contextmanager
def progress_bar(label: str) -> Iterator[Callable[[int, int], None]]:
    """A rich progress bar on stderr, silent when stderr is not a terminal."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    console = Console(stderr=True)
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    ) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


@guard.command("ingest-static")
@repo_argument
@click.option("--include-tests", is_flag=True, help="Index test files too (tests and helpers).")
@click.option("--reset", is_flag=True, help="Delete the repository's graph first.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@handle_errors
def ingest_static_cmd(repo: Path, include_tests: bool, reset: bool, as_json: bool) -> None:
    """Index the repository's Python files into the graph (only changed files are re-read)."""
    from guard_adapters.git.repo import head_sha
    from guard_adapters.index.ingest import ingest_static
    from guard_adapters.workspace import open_guard
    from guard_core.ports import EvidenceBases

    started = time.perf_counter()
    with open_guard(repo) as ws:
        store = ws.store
        if isinstance(store, EvidenceBases):  # the graph of HEAD's evidence
            store = store.writer_for(head_sha(ws.settings.repo))
        if reset:
            store.clear()
            store.ensure_schema()
        with progress_bar("indexing") as update:
            report = ingest_static(
                ws.settings.repo, store, include_tests=include_tests, progress=update
            )
        stats = store.stats()
    elapsed = time.perf_counter() - started
    if as_json:
        emit_json(
            {
                "schema": "guard.ingest-static/1",
                "indexed": report.indexed,
                "reused": report.reused,
                "unchanged": report.unchanged,
                "removed": report.removed,
                "parse_errors": list(report.parse_errors),
                "elapsed_s": round(elapsed, 3),
                **stats.as_dict(),
            }
        )
        return
    click.echo(
        f"indexed {report.indexed} files ({report.reused} of them from the shared index, "
        f"{report.unchanged} unchanged, "
        f"{report.removed} removed) in {elapsed:.2f}s: {stats.functions} functions, "
        f"{stats.tests} tests, {stats.calls} calls, {stats.imports} imports"
    )
    for error in report.parse_errors:
        click.secho(f"  not parsed: {error}", fg="yellow", err=True)


@guard.command("ingest-coverage")
@repo_argument
@click.option(
    "--runs",
    default=1,
    show_default=True,
    type=click.IntRange(1, 20),
    help="Run the suite N times; edges get confidence = share of runs that saw them.",
)
@python_option
@click.option("--shard", default=None, help="K/N: ingest the K-th of N slices of the suite.")
@click.option("--pytest-args", default="", help="Extra arguments for pytest (one string).")
@click.option(
    "--full",
    is_flag=True,
    help="Measure the whole suite even where evidence of an earlier commit could be carried.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@handle_errors
def ingest_coverage_cmd(
    repo: Path,
    runs: int,
    python: str | None,
    shard: str | None,
    pytest_args: str,
    full: bool,
    as_json: bool,
) -> None:
    """Run the suite with per-test coverage and write COVERED_BY evidence.

    Where complete evidence of an earlier commit exists, only the tests a check selects for
    the change since then are re-measured and the rest is carried over; anything unusual (a
    run-all check, a failing test, another environment) measures the whole suite."""
    import shlex

    from guard_adapters.coverage.ingest import ingest_coverage
    from guard_adapters.git.repo import head_sha
    from guard_adapters.workspace import open_guard
    from guard_core.errors import ConfigError
    from guard_core.ports import store_for_commit

    shard_pair = None
    if shard:
        k, _, n = shard.partition("/")
        if not (k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
            raise ConfigError(f"--shard must look like K/N with 1 <= K <= N, got {shard!r}")
        shard_pair = (int(k), int(n))
    overrides: dict[str, Any] = {"python": python} if python else {}
    with open_guard(repo, **overrides) as ws:
        started = time.perf_counter()
        plain = runs == 1 and not shard_pair and not pytest_args.strip()
        why: str | None = "asked for" if full else "--runs, --shard or --pytest-args given"
        if not full and plain:
            why = _carry_evidence(ws, as_json, started)
            if why is None:
                return
        args = (*ws.settings.pytest_args, *shlex.split(pytest_args))
        with progress_bar("tests") as update:
            from guard_adapters.pytest.environment import fingerprint

            interpreter = python or ws.settings.python
            report = ingest_coverage(
                ws.settings.repo,
                ws.store,
                runs=runs,
                python=interpreter,
                pytest_args=args,
                shard=shard_pair,
                progress=update,
                environment=fingerprint(interpreter),
            )
        stats = store_for_commit(ws.store, head_sha(ws.settings.repo)).stats()  # what it wrote
    if as_json:
        emit_json(
            {
                "schema": "guard.ingest-coverage/1",
                "tests": report.tests,
                "edges": report.edges,
                "runs": report.runs,
                "flaky": report.flaky,
                "failed": list(report.failed),
                "incremental": False,
                "full_because": why,
                "elapsed_s": round(report.duration_s, 3),
                **stats.as_dict(),
            }
        )
        return
    click.echo(
        f"{report.tests} tests, {report.edges} COVERED_BY edges from {report.runs} run(s) "
        f"in {report.duration_s:.1f}s (whole suite: {why})"
    )
    for test, rate in sorted(report.flaky.items()):
        click.secho(
            f"  flaky: {test} (flake rate {rate:.2f}; unstable edges excluded)", fg="yellow"
        )
    if report.failed:
        click.secho(f"  {len(report.failed)} tests failed on this commit", fg="yellow")


def _carry_evidence(ws: Guard, as_json: bool, started: float) -> str | None:
    """The incremental ingest; None when it is done, else why the whole suite is measured."""
    from guard_adapters.git.repo import git
    from guard_adapters.git.snapshot import working_tree_id
    from guard_core.remeasure import remeasure_changed

    repo = ws.settings.repo
    try:
        committed = str(git(repo, "rev-parse", "HEAD^{tree}")).strip()
        if working_tree_id(repo) != committed:  # its evidence would be a snapshot's
            return "the working tree has uncommitted changes"
    except Exception as exc:
        return f"cannot compare the working tree with HEAD ({exc})"
    with progress_bar("re-measuring changed tests"):
        try:
            done = remeasure_changed(ws)
        except Exception as exc:  # the whole suite is measured instead
            return f"the incremental ingest failed ({type(exc).__name__}: {exc})"
    if isinstance(done, str):
        return done
    elapsed = time.perf_counter() - started
    if as_json:
        emit_json(
            {
                "schema": "guard.ingest-coverage/1",
                "incremental": True,
                "base": done.base,
                "tests": done.tests,
                "message": done.message,
                "elapsed_s": round(elapsed, 3),
            }
        )
    else:
        click.echo(
            f"{done.message} (from the evidence of {done.base[:12]}) in {elapsed:.1f}s; "
            "--full measures the whole suite"
        )
    return None
