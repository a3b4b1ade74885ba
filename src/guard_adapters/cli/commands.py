"""The remaining ``guard`` commands (changes, check, run, queries, feedback), registered on
import; the ingest commands are in :mod:`guard_adapters.cli.ingest`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click

from guard_adapters.cli.group import emit_json, guard, handle_errors, python_option, repo_option

if TYPE_CHECKING:
    from guard_core.api import Guard
    from guard_core.model import Decision


@guard.command("changes")
@repo_option
@click.option("--base", default=None, help="Diff against this revision instead of HEAD.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@handle_errors
def changes_cmd(repo: Path, base: str | None, as_json: bool) -> None:
    """What the working-tree diff changed, region by region (the slicer's view)."""
    from guard_adapters.workspace import open_guard

    with open_guard(repo, read_only=True, warn=False) as g:  # the slicer the settings name
        cs = g.plugins.slicer(g.settings).slice(g.settings.repo, base)
    if as_json:
        emit_json(
            {
                "schema": "guard.changes/1",
                "base": cs.base,
                "files": [
                    {
                        "path": f.path,
                        "kind": f.kind.value,
                        "role": f.role.value,
                        "old_path": f.old_path,
                        "binary": f.binary,
                    }
                    for f in cs.files
                ],
                "regions": [
                    {
                        "id": r.id,
                        "kind": r.kind.value,
                        "region": r.region.value,
                        "old_id": r.old_id,
                        "body_changed": r.body_changed,
                        "definition_changed": r.definition_changed,
                        "names": list(r.names),
                        "side_effects": r.side_effects,
                        "dynamic_dispatch": r.dynamic_dispatch,
                    }
                    for r in cs.regions
                ],
                "problems": list(cs.problems),
            }
        )
        return
    for f in cs.files:
        click.echo(f"{f.kind.value:9} {f.role.value:11} {f.path}")
    for r in cs.regions:
        flags = [
            n
            for n, on in (
                ("body", r.body_changed),
                ("definition", r.definition_changed),
                ("side-effects", r.side_effects),
                ("dynamic", r.dynamic_dispatch),
            )
            if on
        ]
        click.echo(f"  {r.kind.value:9} {r.id}  [{', '.join(flags)}]")
    for p in cs.problems:
        click.secho(f"  problem: {p}", fg="yellow")
    if cs.is_empty:
        click.echo("no changes against " + cs.base[:12])


def print_decision(decision: Decision, limit: int = 15, file: IO[str] | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    from guard_core.model import Level

    console = Console(file=file)
    if decision.evidence is not None and decision.evidence.sha:
        console.print(f"evidence: {decision.evidence.reason}", highlight=False)
    for o in decision.overrides:
        console.print(f"[yellow]override[/] {o.kind_name}: {o.detail}", highlight=False)
    if decision.tests and decision.level is not Level.RUN_ALL:
        table = Table(show_header=True, header_style="bold")
        table.add_column("test")
        table.add_column("why")
        for test in decision.tests[:limit]:
            why = "; ".join(r.text for r in decision.reasons.get(test, ())[:2])
            table.add_row(test, why)
        console.print(table)
        if len(decision.tests) > limit:
            console.print(f"... and {len(decision.tests) - limit} more (see --json)")
    console.print(
        f"[bold]{decision.level.value}[/]: {len(decision.tests)} of {decision.total_tests} "
        f"tests, trust {decision.trust:.2f}, {decision.elapsed_ms:.0f} ms. "
        f"{decision.skipped_summary}",
        highlight=False,
    )


@guard.command("check")
@repo_option
@click.option(
    "--base",
    default=None,
    help="Diff against this revision (default: the commit the evidence was collected at).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the guard.decision/1 object.")
@click.option(
    "--format",
    "output",
    type=click.Choice(["text", "json", "markdown"]),
    default="text",
    show_default=True,
    help="markdown: a short summary for a CI step summary or a pull request.",
)
@handle_errors
def check_cmd(repo: Path, base: str | None, as_json: bool, output: str) -> None:
    """Which tests the working-tree diff needs, and why (runs nothing)."""
    from guard_adapters.workspace import open_guard

    with open_guard(repo, read_only=True) as g:
        decision = g.check(base)
    if as_json or output == "json":
        emit_json(decision.to_json())
    elif output == "markdown":
        from guard_adapters.summary import markdown_summary

        click.echo(markdown_summary(decision), nl=False)
    else:
        print_decision(decision)


_run_options = [
    repo_option,
    click.option("--base", default=None, help="Diff against this revision."),
    click.option(
        "--min-trust",
        type=click.FloatRange(0, 1),
        default=None,
        help="Exit 1 when the decision's trust is below this.",
    ),
    python_option,
    click.option(
        "--refresh/--no-refresh",
        default=None,
        help="Re-measure the tests that run and, when they pass, move the evidence to this "
        "tree (default: on with the embedded server, off with a shared one).",
    ),
]


def with_run_options(func: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(_run_options):
        func = option(func)
    return func


def _open_for_run(repo: Path, python: str | None, refresh: bool | None) -> Guard:
    """The Guard `guard run` (and its plan) work with, from the run options."""
    from guard_adapters.workspace import open_guard

    return open_guard(repo, python=python, refresh_evidence=refresh)


@guard.command("run")
@with_run_options
@handle_errors
def run_cmd(base: str | None, min_trust: float | None, **options: Any) -> None:
    """Check, then run the selected tests: exit 0 pass, 1 fail (or trust too low), 2 error
    or a selected test that pytest did not run. Pytest projects of their own in subfolders run
    from their own folder."""
    import sys

    with _open_for_run(**options) as g:
        report = g.run(base)
    print_decision(report.decision, limit=5)
    for note in report.notes:
        click.secho(f"guard: {note}", fg="yellow", err=True)
    if report.refreshed:
        click.echo(f"guard: {report.refreshed}")
    if report.result is None:
        click.echo("guard: the change affects no test; nothing to run")
    elif report.failed:
        click.secho(f"guard: {len(report.failed)} selected tests failed", fg="red", err=True)
    elif report.unrun:
        click.secho("guard: not every selected test ran: no pass", fg="red", err=True)
    code = report.exit_code
    if code == 0 and min_trust is not None and report.decision.trust < min_trust:
        click.secho(
            f"guard: trust {report.decision.trust:.2f} is below --min-trust {min_trust}",
            fg="red",
            err=True,
        )
        code = 1
    sys.exit(code)


RUN_PLAN = "guard.run-plan/1"


@guard.command("run-plan", hidden=True)
@with_run_options
@handle_errors
def run_plan_cmd(base: str | None, min_trust: float | None, **options: Any) -> None:
    """What `guard run` would run, for a client that runs pytest itself (the warm worker's
    answer to `guard run`; see guard_adapters.cli.fast_run). Plan `here`: run it in process
    (a refresh, the whole suite, or nothing to run)."""
    import io

    with _open_for_run(**options) as g:
        plan = g.plan_run(base)
        runner = g.plugins.runner(g.settings)
        command = getattr(runner, "command", None)
        projects = getattr(runner, "projects", None)
        # another project's tests run from its own folder: the command here knows how
        several = projects is not None and any(projects(g.settings.repo, plan.tests))
        if plan.refreshes or not plan.tests or command is None or several:
            emit_json({"schema": RUN_PLAN, "plan": "here"})
            return
        from guard_adapters.pytest.runner import plugins_path

        shown = io.StringIO()
        print_decision(plan.decision, limit=5, file=shown)
        emit_json(
            {
                "schema": RUN_PLAN,
                "plan": "pytest",
                "decision": shown.getvalue(),
                "notes": list(plan.notes),
                "command": command(list(plan.tests), measuring=False),
                "whole_suite": command(None, measuring=False),
                "expect": list(plan.tests),
                "cwd": str(g.settings.repo),
                "env": {"PYTHONPATH": plugins_path(), "GUARD_ROOT": str(g.settings.repo)},
                "trust": plan.decision.trust,
                "min_trust": min_trust,
            }
        )


@guard.command("record-run", hidden=True)
@repo_option
@click.option("--report", type=click.Path(path_type=Path), required=True)
@click.option("--elapsed-ms", type=float, required=True)
@handle_errors
def record_run_cmd(repo: Path, report: Path, elapsed_ms: float) -> None:
    """Keep the outcomes of a run that a `run-plan` client ran (the reporter's file)."""
    from guard_adapters.pytest.runner import read_record
    from guard_adapters.workspace import open_guard

    with open_guard(repo, warn=False) as g:
        g.record_run(read_record(g.settings.repo, report, elapsed_ms))


@guard.command("covering-tests")
@click.argument("function_id")
@repo_option
@click.option("--json", "as_json", is_flag=True)
@handle_errors
def covering_tests_cmd(function_id: str, repo: Path, as_json: bool) -> None:
    """Tests that executed FUNCTION_ID, most confident first (exit 2: not in the graph)."""
    from guard_adapters.workspace import open_guard

    with open_guard(repo, read_only=True) as g:
        edges = g.covering_tests(function_id)
    if as_json:
        emit_json(
            [
                {
                    "test": e.test,
                    "confidence": e.confidence,
                    "source": e.source,
                    "evidence_count": e.evidence_count,
                    "last_verified_sha": e.last_verified_sha,
                }
                for e in edges
            ]
        )
        return
    for e in edges:
        click.echo(f"{e.confidence:.2f}  {e.source:11} {e.test}")
    if not edges:
        click.echo(f"no test executed {function_id}")


@guard.command("callers")
@click.argument("function_id")
@repo_option
@click.option("--hops", default=2, show_default=True, type=click.IntRange(1, 10))
@click.option("--min-confidence", default=0.0, show_default=True, type=click.FloatRange(0, 1))
@click.option("--json", "as_json", is_flag=True)
@handle_errors
def callers_cmd(
    function_id: str, repo: Path, hops: int, min_confidence: float, as_json: bool
) -> None:
    """Functions that reach FUNCTION_ID through static calls (exit 2: not in the graph)."""
    from guard_adapters.workspace import open_guard

    with open_guard(repo, read_only=True) as g:
        callers = g.callers(function_id, hops, min_confidence)
    if as_json:
        emit_json(
            [{"id": c.id, "hops": c.hops, "confidence": round(c.confidence, 4)} for c in callers]
        )
        return
    for c in callers:
        click.echo(f"{c.hops}  {c.confidence:.2f}  {c.id}")
    if not callers:
        click.echo(f"no static callers of {function_id}")


@guard.command("feedback")
@repo_option
@click.option("--function", "function_id", required=True, help="The changed function.")
@click.option("--test", "test_id", required=True, help="The test that failed unselected.")
@handle_errors
def feedback_cmd(repo: Path, function_id: str, test_id: str) -> None:
    """Repair the graph after a missed failure: TEST will run whenever FUNCTION changes."""
    from guard_adapters.git.repo import head_sha
    from guard_adapters.workspace import open_guard
    from guard_core.model import test_function_id

    with open_guard(repo) as g:
        g.feedback(function_id, test_id, head_sha(g.settings.repo))
    click.echo(
        f"recorded: {test_function_id(test_id)} now covers {function_id} "
        "(miss_repair, confidence 1.0)"
    )
