"""Real bugs: fixes from a project's git history, re-introduced.

For a fix commit F whose change made tests pass, the eval takes F's tree (its new tests
included), records evidence there, re-introduces the bug by reverse-applying the fix's non-test
source diff, and requires the tests that then fail to be selected. Which tests fail is never
assumed from the fix: ``find`` keeps a candidate only when its revert makes tests fail in two
runs (as the project runs, then serially), and the eval recomputes that truth.

The repositories come from the mirrors the search tool's ``fetch`` brings
(``GUARD_EVALS_MIRRORS``, by default ``/work/.mirror/<owner>+<name>/repo``): sdists have no
history. ``evals/bugs.json`` keeps the verified bugs (commit ids and test ids, no source).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path, PurePosixPath

import attrs
import click

from evals.edits import Edit, apply, revert
from evals.metrics import Summary
from evals.pytest_run import SuiteTimeout, run_pytest
from evals.runner import TargetResult
from evals.targets import WORK, Prepared, Target, base_python, git, target_venv
from evals.truth import TRUTH, serial

BUGS = Path(__file__).resolve().parent / "bugs.json"
MIRRORS = Path(os.environ.get("GUARD_EVALS_MIRRORS", "/work/.mirror"))
MAX_FIX_LINES = 60  # a source change larger than this is a feature or a refactor, not a fix


@attrs.frozen
class Project:
    name: str
    repository: str  # owner/name on GitHub, as fetched
    sources: tuple[str, ...]  # the package's folders: a fix's non-test changes there
    test_deps: tuple[str, ...] = ("pytest<9",)
    pytest_args: tuple[str, ...] = ()
    python: str = "3.12"  # "": the harness's own interpreter, nothing installed (tests)
    since: str = "2021-01-01"  # older commits need older Pythons and tools

    @property
    def mirror(self) -> Path:
        path = MIRRORS / self.repository.replace("/", "+") / "repo"
        if not (path / "HEAD").is_file() and not (path / ".git").exists():
            raise MissingMirror(
                f"no git mirror of {self.repository} at {path}: fetch github:{self.repository} "
                "first (the tool library's fetch), or point GUARD_EVALS_MIRRORS at the folder "
                "that holds <owner>+<name>/repo"
            )
        return path


class MissingMirror(click.ClickException):
    """A project's history is not on this machine (sdists have none): a setup step, said as
    such by the command line, not a traceback."""


# thefuck, youtube-dl and black are kept for an independent check: never add them here
PROJECTS = {
    p.name: p
    for p in (
        Project("sqlparse", "andialbrecht/sqlparse", ("sqlparse",)),
        Project("click", "pallets/click", ("src/click",)),
        Project("jinja", "pallets/jinja", ("src/jinja2",), ("pytest<9", "markupsafe", "trio")),
    )
}


@attrs.frozen
class Bug:
    id: str
    project: str
    fix: str  # the fix commit's sha
    subject: str
    files: tuple[str, ...]  # the source files the fix changed (reverted to re-introduce it)
    failing: tuple[str, ...]  # tests failing under the revert when it was verified

    def edit(self, checkout: Path) -> Edit:
        """The bug as an edit of the fix's tree: its source diff, reversed."""
        diff = git(checkout, "diff", self.fix, f"{self.fix}^", "--", *self.files)
        return Edit(self.id, self.project, "real-bug", "real-bug", self.subject, diff, self.files)


def load_bugs(path: Path = BUGS) -> list[Bug]:
    if not path.exists():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    return [Bug(**{**b, "files": tuple(b["files"]), "failing": tuple(b["failing"])}) for b in data]


def save_bugs(bugs: Sequence[Bug], path: Path = BUGS) -> None:
    rows = [attrs.asdict(b) for b in sorted(bugs, key=lambda b: (b.project, b.id))]
    path.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


def is_test_path(path: str) -> bool:
    p = PurePosixPath(path)
    return "tests" in p.parts or "testing" in p.parts or p.name.startswith("test_")


def candidates(project: Project) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    """Commits since ``project.since`` that change tests and at most ``MAX_FIX_LINES`` lines of
    Python under the sources: (sha, subject, source files), newest first."""
    log = git(project.mirror, "log", "--no-merges", f"--since={project.since}", "--format=%H %P|%s")
    for line in log.splitlines():
        shas, _, subject = line.partition("|")
        sha, *parents = shas.split()
        if not parents:  # a root commit fixes nothing
            continue
        changed = _changed_lines(project.mirror, sha, "--diff-filter=M")  # files it modified
        sources = tuple(
            p for p in changed
            if p.endswith(".py") and not is_test_path(p)
            and any(p.startswith(f"{s}/") for s in project.sources)
        )  # fmt: skip
        tests = [
            p for p in _changed_lines(project.mirror, sha) if is_test_path(p) and p.endswith(".py")
        ]
        if sources and tests and sum(changed[p] for p in sources) <= MAX_FIX_LINES:
            yield sha, subject, sources


def _changed_lines(repo: Path, sha: str, *options: str) -> dict[str, int]:
    """Lines added and deleted per file by commit ``sha`` (a binary file counts as huge)."""
    changed: dict[str, int] = {}
    for row in git(repo, "show", "--numstat", "--format=", *options, sha).splitlines():
        added, deleted, path = row.split("\t", 2)
        changed[path] = int(added) + int(deleted) if added != "-" else 10**6
    return changed


def checkout(project: Project, sha: str, work: Path = WORK) -> Prepared:
    """The project's tree at ``sha`` in a clean work copy, with its venv."""
    repo = work / "bugs" / project.name
    if not (repo / ".git").is_dir():
        repo.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", str(project.mirror), str(repo)], check=True)
    if git(repo, "cat-file", "-t", sha, check=False).strip() != "commit":  # the mirror moved on
        git(repo, "fetch", "-q", str(project.mirror))
    git(repo, "checkout", "-q", "-f", sha)
    git(repo, "clean", "-qfdx")  # Guard's and testmon's state of the last bug too
    (repo / ".git" / "info" / "exclude").write_text(
        "__pycache__/\n*.pyc\n.pytest_cache/\n.coverage*\n.testmondata*\n*.egg-info/\n",
        encoding="utf-8",
    )
    if project.python:
        deps = ("coverage", *project.test_deps)
        python = target_venv(repo, deps, base_python(project.python))
        # the editable install follows the checkout; a package that moved needs it again
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "-e", str(repo)],
                       check=True, capture_output=True)  # fmt: skip
    else:
        python = Path(sys.executable)
    target = Target(
        f"{project.name}-bugs", f"{project.repository}@{sha[:10]}", project.test_deps,
        project.sources, project.pytest_args, project.python, testmon=bool(project.python),
    )  # fmt: skip
    return Prepared(target, repo, python)


def verify_bug(project: Project, sha: str, subject: str, files: tuple[str, ...],
               work: Path = WORK) -> Bug | None:  # fmt: skip
    """The bug of fix ``sha`` when reverting its source diff makes tests fail in both runs."""
    prepared = checkout(project, sha, work)
    args = project.pytest_args
    clean = run_pytest(prepared.python, prepared.repo, None, args, timeout=300)
    if clean.exit_code not in (0, 1) or not clean.seconds:
        return None  # the fix's tree does not run here (old tools, missing dependencies)
    universe = clean.seconds.keys()
    bug = Bug(f"{project.name}-bug-{sha[:10]}", project.name, sha, subject, files, ())
    apply(prepared.repo, bug.edit(prepared.repo))
    try:
        suites = [run_pytest(prepared.python, prepared.repo, None, a, timeout=300)
                  for a in (args, serial(args))]  # fmt: skip
    except SuiteTimeout:
        return None
    finally:
        revert(prepared.repo)
    if any(run.broken or (run.exit_code not in (0, 1) and not run.seconds) for run in suites):
        return None  # test modules no longer import: an API change reverted, not a bug
    runs = [run.failures(universe) for run in suites]
    failing = (runs[0] & runs[1]) - clean.failures(universe)
    if not failing or runs[0] != runs[1]:
        return None
    return attrs.evolve(bug, failing=tuple(sorted(failing)))


def find(project: Project, wanted: int, known: Sequence[Bug], log: Callable[[str], None],
         work: Path = WORK) -> list[Bug]:  # fmt: skip
    """Up to ``wanted`` new verified bugs of ``project`` (newest fixes first)."""
    seen = {b.fix for b in known}
    found: list[Bug] = []
    for sha, subject, files in candidates(project):
        if len(found) >= wanted:
            break
        if sha in seen:
            continue
        try:
            bug = verify_bug(project, sha, subject, files, work)
        except subprocess.CalledProcessError as exc:  # a diff that does not revert cleanly
            log(f"  {sha[:10]} {subject[:60]}: skipped ({exc.cmd[:3]} failed)")
            continue
        log(f"  {sha[:10]} {subject[:60]}: " + (f"{len(bug.failing)} failing" if bug else "no"))
        if bug is not None:
            found.append(bug)
    return found


def evaluate_bugs(
    project: Project,
    bugs: Sequence[Bug],
    *,
    fresh_truth: bool = False,
    log: Callable[[str], None] = print,
    work: Path = WORK,
    truth_dir: Path = TRUTH,
) -> TargetResult:
    """Every strategy on each bug, each measured on its own fix's tree."""
    from evals.runner import edits_digest, guard_commit, measure

    commit = guard_commit()
    results, edits = [], []
    for bug in bugs:
        prepared = checkout(project, bug.fix, work)
        edit = bug.edit(prepared.repo)
        edits.append(edit)
        result = measure(prepared, [edit], commit, fresh_truth=fresh_truth, log=log, work=work,
                         truth_dir=truth_dir)  # fmt: skip
        for row in result.rows:  # the truth is recomputed, never assumed
            if row["failing"] != len(bug.failing):
                log(f"[{bug.id}] {row['failing']} failing now, {len(bug.failing)} when verified")
        results.append(result)
    return attrs.evolve(combine(f"{project.name}-bugs", results), edits_sha256=edits_digest(edits))


def combine(name: str, results: Sequence[TargetResult]) -> TargetResult:
    """One report of many one-bug measurements (each its own tree, suite and evidence): rows
    side by side, each strategy's figures over the bugs."""
    summaries = []
    # every strategy any bug measured (a bug whose truth was unstable measured none)
    strategies = list(dict.fromkeys(s.strategy for r in results for s in r.summaries))
    for strategy in strategies:
        mine = [s for r in results for s in r.summaries if s.strategy == strategy]
        failing = [r.rows[0]["failing"] for r in results if r.rows]
        missed = [len(r.rows[0]["missed"].get(strategy, ())) for r in results if r.rows]
        latencies = [s.latency_p50 for s in mine if s.latency_p50 is not None]
        summaries.append(
            Summary(
                strategy=strategy,
                edits=sum(s.edits for s in mine),
                killable=sum(s.killable for s in mine),
                escaped_edits=tuple(e for s in mine for e in s.escaped_edits),
                silent_edits=tuple(e for s in mine for e in s.silent_edits),
                recall=1 - sum(missed) / sum(failing) if sum(failing) else 1.0,
                fallback_rate=_mean([s.fallback_rate for s in mine if s.edits]),
                test_time_savings=_mean([s.test_time_savings for s in mine if s.edits]),
                wall_savings=_mean([s.wall_savings for s in mine if s.edits]),
                latency_p50=statistics.median(latencies) if latencies else None,
                latency_max=max((s.latency_max or 0.0 for s in mine), default=None)
                if latencies
                else None,
                wall_measured=all(s.wall_measured for s in mine),
            )
        )
    first = results[0]
    ends = {r.guard_commit_end for r in results}
    # a bug measures one checkout each: its suite's size and times are the median bug's
    return TargetResult(
        name,
        int(statistics.median(r.tests for r in results)),
        statistics.median(r.suite_seconds for r in results),
        statistics.median(r.ingest_seconds for r in results),
        tuple(summaries),
        tuple(row for r in results for row in r.rows),
        split_sha256=first.split_sha256,
        edits_sha256="",
        guard_commit=first.guard_commit,
        # a bug measured after the commit moved makes the whole report no result
        guard_commit_end=ends.pop() if len(ends) == 1 else "moved during the run",
        src_tree=first.src_tree,
        python=first.python,
        timed_out=tuple(e for r in results for e in r.timed_out),
        unstable=tuple(u for r in results for u in r.unstable),
    )


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0
