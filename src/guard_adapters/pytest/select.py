"""``pytest --guard``: Guard's decision inside pytest's own collection.

Loaded through the ``pytest11`` entry point and off unless asked (``--guard``, or ``guard =
true`` in the ini file). It keeps the tests the working tree's change needs and deselects the
rest the pytest way, so ``N deselected`` shows in the summary and ``-k``, ``-m`` and node ids
intersect with it. Whenever Guard cannot decide (no graph, no evidence, an internal error) it
deselects nothing and says so in one line. Nothing of Guard is imported unless it is on.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

_DECISION = pytest.StashKey[Any]()
_NOTE = pytest.StashKey[str]()
_REFRESH = pytest.StashKey[Any]()
_PREFIX = pytest.StashKey[str]()  # pytest's rootdir relative to the repository root
_UNRUN = pytest.StashKey[list[str]]()  # selected ids this session did not collect
_COLLECTED = pytest.StashKey[set[str]]()  # files this session collected without error
_OTHERS = pytest.StashKey[set[str]]()  # ids -k, -m or another plug-in deselected
_SUMMARY = pytest.StashKey[str]()  # a pytest-xdist worker's step summary of the decision


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("guard", "test selection by Guard")
    group.addoption(
        "--guard",
        action="store_true",
        default=None,
        help="run only the tests the working tree's change needs (Guard)",
    )
    group.addoption(
        "--no-guard",
        action="store_false",
        dest="guard",
        help="turn Guard's selection off, whatever the ini file says",
    )
    group.addoption(
        "--guard-explain",
        action="store_true",
        default=False,
        help="say why each selected test runs and why the rest do not",
    )
    group.addoption(
        "--guard-no-refresh",
        action="store_true",
        default=False,
        help="do not measure the run to refresh the evidence after a pass",
    )
    parser.addini("guard", "select tests with Guard (like --guard)", type="bool", default=False)


def _enabled(config: pytest.Config) -> bool:
    given = config.getoption("guard")
    return bool(config.getini("guard")) if given is None else bool(given)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: Any, args: Any) -> None:
    """Measure the run from its start, so that a pass can refresh the evidence."""
    given = getattr(early_config.known_args_namespace, "guard", None)
    if not (bool(early_config.getini("guard")) if given is None else given):
        return
    xdist = getattr(early_config.known_args_namespace, "numprocesses", None) or os.environ.get(
        "PYTEST_XDIST_WORKER"
    )
    if xdist or os.environ.get("GUARD_COLLECT_OUT"):  # workers measure apart; or measured
        return
    if getattr(early_config.known_args_namespace, "guard_no_refresh", False):
        return
    try:
        from guard_adapters.pytest.select_refresh import InRunRefresh

        early_config.stash[_REFRESH] = InRunRefresh.begin(early_config)
    except Exception:  # no refresh, the run goes on
        return


def pytest_deselected(items: list[pytest.Item]) -> None:
    if not items:
        return
    config = items[0].config
    refresh = config.stash.get(_REFRESH, None)
    if refresh is not None and refresh.deselecting:
        return  # Guard's own deselection
    if refresh is not None:
        refresh.narrowed = True  # -k, -m or another plug-in left tests out
    config.stash.setdefault(_OTHERS, set()).update(item.nodeid for item in items)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Any:
    outcome = yield
    report = outcome.get_result()
    if report.passed and report.nodeid and _enabled(collector.config):
        collector.config.stash.setdefault(_COLLECTED, set()).add(report.nodeid)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist's controller: what each worker found unrun (workers decide; the
    controller, which collects nothing, fails the session for them)."""
    output = getattr(node, "workeroutput", {})
    config = node.config
    missing = output.get("guard_unrun")
    if missing:
        config.stash[_UNRUN] = sorted({*config.stash.get(_UNRUN, []), *missing})
    if output.get("guard_summary"):  # every worker decided alike: the first one speaks
        config.stash.setdefault(_SUMMARY, output["guard_summary"])


def _prefix(config: pytest.Config) -> str:
    """pytest's rootdir relative to the repository's root ("" when it is the root): item ids
    are relative to the one, Guard's to the other."""
    found = config.stash.get(_PREFIX, None)
    if found is None:
        found = ""
        try:
            from guard_adapters.git.repo import repo_root

            rel = os.path.relpath(config.rootpath, repo_root(config.rootpath))
            found = "" if rel == "." else rel.replace(os.sep, "/")
        except Exception:  # not a repository: Guard decides nothing here anyway
            pass
        config.stash[_PREFIX] = found
    return found


def _repo_id(nodeid: str, prefix: str) -> str:
    return f"{prefix}/{nodeid}" if prefix else nodeid


def _narrowed_by_user(config: pytest.Config) -> bool:
    """Paths, node ids, -k or -m on the command line: the user ran part of the suite."""
    given = getattr(getattr(pytest.Config, "ArgsSource", None), "ARGS", None)
    if given is None or getattr(config, "args_source", None) == given:
        return True
    args = config.invocation_params.args
    return any(a in ("-k", "-m") or a.startswith(("-k", "-m")) for a in args)


def _decide(config: pytest.Config) -> tuple[Any, str]:
    """(the decision or None, a note for the summary)."""
    if config.stash.get(_REFRESH, None) is None:  # a refresh needs Guard here
        from guard_adapters.pytest.worker_decision import ask

        answer = ask(config.rootpath)
        if answer is not None:
            return answer, ""
    try:
        from guard_adapters.workspace import open_guard
        from guard_core.errors import GuardError
    except ImportError as exc:  # pragma: no cover - a broken installation
        return None, f"Guard is not importable ({exc}); running every test"
    try:
        with open_guard(config.rootpath) as guard:
            info = guard.store.ingest_info()
            if not info.coverage_sha:
                return None, (
                    "no evidence for this repository yet (run `guard init`); running every test"
                )
            decision = guard.check()
            refresh = config.stash.get(_REFRESH, None)
            if refresh is not None:
                refresh.start(guard, decision)
            elif os.environ.get("GUARD_WORKER") != "0":  # the next run asks a warm worker
                from guard_adapters.worker.client import start_worker

                start_worker(["check", "--repo", str(config.rootpath)])
            return decision, ""
    except GuardError as exc:
        return None, f"cannot decide ({exc.message}); running every test"
    except Exception as exc:  # fail safe: an error never deselects anything
        return None, f"cannot decide ({exc!r}); running every test"


def _runs_all(decision: Any) -> bool:
    from guard_core.model import Level

    return bool(decision.level is Level.RUN_ALL)


def _wanted(nodeid: str, selected: set[str], prefix: str = "") -> bool:
    """Whether an item belongs to a selected id (:func:`belongs_to`), its id taken from the
    repository root."""
    from guard_adapters.pytest.node_ids import belongs_to

    return belongs_to(_repo_id(nodeid, prefix), selected)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    if not _enabled(config) or not items:
        return
    decision, note = _decide(config)  # each pytest-xdist worker decides alike: same tree
    config.stash[_DECISION] = decision
    refresh = config.stash.get(_REFRESH, None)
    if (
        refresh is not None
        and decision is not None
        and refresh.narrowed_by_others(config, decision, items)
    ):
        refresh.session = None  # a selected test that does not run keeps stale evidence
        refresh.note = "evidence not refreshed: -k, -m or node ids left out selected tests"
    if refresh is not None:
        refresh.kept = tuple(item.nodeid for item in items)
    prefix = _prefix(config) if decision is not None else ""
    if decision is not None and not _narrowed_by_user(config):  # else the user chose a part
        from guard_core.unrun import unrun

        seen = [_repo_id(item.nodeid, prefix) for item in items]
        collected = [_repo_id(n, prefix) for n in config.stash.get(_COLLECTED, ())]
        others = [_repo_id(n, prefix) for n in config.stash.get(_OTHERS, ())]
        missing = unrun(decision.tests, seen, collected, others)
        config.stash[_UNRUN] = missing
        if hasattr(config, "workeroutput"):  # a pytest-xdist worker: tell the controller
            config.workeroutput["guard_unrun"] = missing
    if decision is None or _runs_all(decision):
        config.stash[_NOTE] = note or _run_all_note(decision)
        _hand_summary(config)
        return
    selected = set(decision.tests)
    keep = [item for item in items if _wanted(item.nodeid, selected, prefix)]
    drop = [item for item in items if not _wanted(item.nodeid, selected, prefix)]
    if drop:
        if refresh is not None:
            refresh.deselecting = True
        config.hook.pytest_deselected(items=drop)
        if refresh is not None:
            refresh.deselecting = False
        items[:] = keep
    if refresh is not None:
        refresh.kept = tuple(item.nodeid for item in items)
    config.stash[_NOTE] = (
        f"{len(keep)} selected, {len(drop)} deselected ({decision.level.value}, trust "
        f"{decision.trust:.2f}); {decision.skipped_summary}"
    )
    _hand_summary(config)


def _hand_summary(config: pytest.Config) -> None:
    """A pytest-xdist worker's decision, rendered for the controller's step summary (the
    controller collects nothing, so it decides nothing)."""
    if hasattr(config, "workeroutput") and os.environ.get("GITHUB_STEP_SUMMARY"):
        from guard_adapters.summary import markdown_summary

        decision = config.stash.get(_DECISION, None)
        config.workeroutput["guard_summary"] = markdown_summary(
            decision, note=config.stash.get(_NOTE, "")
        )


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    refresh = session.config.stash.get(_REFRESH, None)
    if refresh is not None:  # after the collector saved what it measured
        refresh.note = refresh.finish(int(exitstatus)) or refresh.note
    decision = session.config.stash.get(_DECISION, None)
    if (
        exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
        and decision is not None
        and (not _runs_all(decision) and not decision.tests)
    ):
        session.exitstatus = pytest.ExitCode.OK  # the change needs no test: nothing failed
    if session.config.stash.get(_UNRUN, None) and session.exitstatus in (
        pytest.ExitCode.OK,
        pytest.ExitCode.NO_TESTS_COLLECTED,
    ):
        session.exitstatus = 2  # never a pass for selected tests that did not run


def _run_all_note(decision: Any) -> str:
    if decision is None:
        return "running every test"
    why = "; ".join(o.detail for o in decision.overrides) or "trust too low"
    return f"run-all: {why}"


def pytest_report_collectionfinish(config: pytest.Config) -> str | None:
    note = config.stash.get(_NOTE, "")
    return f"guard: {note}" if note and _enabled(config) else None


def _step_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """In CI (``GITHUB_STEP_SUMMARY`` names a file): append the decision and the outcome."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path or hasattr(config, "workerinput"):  # the controller writes it, once
        return
    from guard_adapters.summary import markdown_summary, outcome_lines

    stats = terminalreporter.stats
    outcomes = {k: len(stats.get(k, ())) for k in ("passed", "failed", "error", "skipped")}
    text = config.stash.get(_SUMMARY, None) or markdown_summary(
        config.stash.get(_DECISION, None), note=config.stash.get(_NOTE, "")
    )
    text = "\n".join([text.rstrip("\n"), *outcome_lines(outcomes), ""])
    missing = config.stash.get(_UNRUN, None)
    if missing:
        from guard_core.unrun import unrun_note

        text += f"\n**Not run:** {unrun_note(missing)}\n"
    try:
        with open(path, "a", encoding="utf-8") as summary:
            summary.write(text + "\n")
    except OSError as exc:  # the summary is for people; the run's result stands
        terminalreporter.write_line(f"guard: cannot write the step summary: {exc}")


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if _enabled(config):
        _step_summary(terminalreporter, config)
    missing = config.stash.get(_UNRUN, None)
    if missing:
        from guard_core.unrun import unrun_note

        terminalreporter.write_line(f"guard: {unrun_note(missing)}", red=True)
    refresh = config.stash.get(_REFRESH, None)
    if refresh is not None and refresh.note and _enabled(config):
        terminalreporter.write_line(f"guard: {refresh.note}")
    if not _enabled(config) or not config.getoption("guard_explain"):
        return
    decision = config.stash.get(_DECISION, None)
    write = terminalreporter.write_line
    terminalreporter.section("guard")
    if decision is None:
        write(config.stash.get(_NOTE, "Guard did not decide"))
        return
    if decision.evidence is not None and decision.evidence.sha:
        write(f"evidence: {decision.evidence.reason}")
    for o in decision.overrides:
        write(f"override {o.kind_name}: {o.detail}")
    if not _runs_all(decision):
        for test in decision.tests:
            reasons = "; ".join(r.text for r in decision.reasons.get(test, ())[:2])
            write(f"{test}: {reasons}")
    write(decision.skipped_summary or "")
