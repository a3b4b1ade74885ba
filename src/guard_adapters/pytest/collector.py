"""The pytest plugin that records what each test executed (loaded with ``-p`` by
``guard ingest-coverage`` inside the target's interpreter).

It imports only the standard library, pytest and coverage, so it runs in any interpreter that
has those. Coverage contexts label every line with the code that ran it:

- ``<session>``: start-up and plugins (charged to every test);
- ``<import>MODULE``: the body of a repository module while it is first imported (charged to
  every test: a module body runs only for its first importer, yet every later one relies on it);
- ``<collect>NODEID``: the rest of collecting a node, e.g. a test module's own module-level code
  (charged to the tests under that node);
- ``<fixture>BASEID::NAME``: a fixture's setup (charged to every test that requests the fixture,
  whatever its scope, so session fixtures are not charged to the first test only);
- ``<memo>MODULE:QUALNAME``: a call filling a ``functools`` cache entry (``memo.py``; charged
  to every context that read the cache, hit or miss);
- the test's node id: its own setup, call and teardown.

Files inside the repository that a context opens (templates, JSON, ...) are recorded through an
audit hook, and so are the processes it starts: a Python child is handed a token and measured
by ``child.py`` (charged to the context that started it), any other one marks the context a
spawner. Results go to ``$GUARD_COLLECT_OUT``: ``coverage-W.db`` and ``tests-W.json`` for
each process W (``main``, or the pytest-xdist worker id).
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from guard_adapters.pytest.child import TOKEN
from guard_adapters.pytest.containers import ContainerSwapper, FillTracker
from guard_adapters.pytest.import_labels import ImportLabeler
from guard_adapters.pytest.labels import (
    COLLECT,
    FILL,
    FIXTURE,
    MEMO,
    OWN,
    SEGMENT,
    SESSION,
)
from guard_adapters.pytest.memo import MemoWatcher
from guard_adapters.pytest.node_ids import MEASURED_IDS, belongs_to, unmatched
from guard_adapters.pytest.processes import (
    AUDITED,
    CHILD_SITE,
    EXEC_ENV,
    EXECNET_BOOTSTRAP,
    SPAWNS,
    runs_python,
)
from guard_adapters.pytest.reflection import ReflectionRecorder
from guard_adapters.pytest.reporter import fold_phase
from guard_adapters.pytest.tracers import (
    SKIP_PARTS,
    CoverageLines,
    MonitoringTracer,
    use_monitoring,
)

_CHARGED_ONLY = (MEMO, SEGMENT, FILL)  # labels of parts of a context
_HEARD = SPAWNS | AUDITED  # the audit events the collector acts on


_STDLIB = os.path.dirname(os.__file__) + os.sep


def _caller() -> str:
    """The file of the code that asked for a listing: the first frame past this hook and the
    standard library's own helpers (``glob``, ``pathlib``, ``os.walk``)."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if "importlib" in name or not name.startswith(_STDLIB):
            return name
        frame = frame.f_back  # type: ignore[assignment]
    return ""


class GuardCollector:
    def __init__(self, root: Path, out: Path, shard: tuple[int, int] | None) -> None:
        self.root = root
        self.out = out
        self.shard = shard
        self.context = SESSION
        self.tests: dict[str, dict[str, Any]] = {}
        self.collected: list[str] | None = None  # the session's collection, none deselected
        self.opened: dict[str, set[str]] = defaultdict(set)
        self.spawned: set[str] = set()  # contexts that started a Python child process
        self.children: dict[str, str] = {}  # token handed to a child -> the context it ran for
        self._token_set = False
        # children start measured (child_site/sitecustomize.py) when they keep PYTHONPATH
        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (CHILD_SITE, os.environ.get("PYTHONPATH")) if p
        )
        os.environ.setdefault("GUARD_REPO", str(root))
        os.environ.setdefault("GUARD_COLLECT_OUT", str(out))
        self.config: Any = None  # pytest's, once registered
        self._prefix: str | None = None  # pytest's rootdir, relative to the repository
        # one data file per process: pytest-xdist runs the plugin in every worker
        self.worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.tracer: MonitoringTracer | None = None
        self.cov: Any = None
        if not use_monitoring():
            import coverage

            self.cov = coverage.Coverage(
                data_file=str(out / f"coverage-{self.worker}.db"),
                source=[str(root)],
                omit=[str(root / ".guard" / "*"), str(root / ".venv" / "*"), "*/site-packages/*"],
                config_file=False,
                branch=False,
            )
        # Repository modules imported before measuring began (by plugins): their code ran
        # unseen, so the ingest charges all of it to every test.
        self.preloaded = sorted(
            {
                rel
                for mod in list(sys.modules.values())
                if (rel := self._relative(getattr(mod, "__file__", None) or "")) is not None
            }
        )
        self.lines: CoverageLines | None = None
        if self.cov is not None:
            self.cov.start()
            inner: Any = getattr(self.cov, "_collector", None)
            if callable(getattr(inner, "use_data", None)):  # else coverage's own data file
                self.lines = CoverageLines(root)
                inner.use_data(self.lines, None)
            self.cov.switch_context(SESSION)
        else:
            self.tracer = MonitoringTracer(root)
        sys.addaudithook(self._audit)
        sys.meta_path.insert(0, ImportLabeler(self.root, self._switch, self._module_ran))
        self._watch_multiprocessing()
        self.memo = MemoWatcher(self._enter_fill, self, self._ours, self._resume)
        self.reflection = ReflectionRecorder(self._code_file, self)
        if os.environ.get("GUARD_COLLECT_REFLECT", "1") != "0":  # 0: without (benchmarks)
            self.reflection.install()
        self.swapper: ContainerSwapper | None = None
        if os.environ.get("GUARD_COLLECT_MEMO", "1") != "0":  # 0: measure without (benchmarks)
            self.memo.install()
        if os.environ.get("GUARD_COLLECT_DICTS", "1") != "0":  # 0: without (benchmarks)
            tracker = FillTracker(self._switch, lambda: self.context, self.memo.consumed)
            self.swapper = ContainerSwapper(tracker)

    def _module_ran(self, module: Any) -> None:
        self.reflection.ran(module)
        if self.swapper is not None:
            self.swapper.module_ran(module)

    def _ours(self, filename: str) -> bool:
        return self._code_file(filename) is not None

    def _code_file(self, filename: str) -> str | None:
        """The repository path of a code file that is measured (not a virtualenv's)."""
        rel = self._relative(filename)
        return None if rel is None or SKIP_PARTS.intersection(rel.split("/")) else rel

    def _watch_multiprocessing(self) -> None:
        """``spawn`` and ``forkserver`` children start without an audit event."""
        import multiprocessing.process

        base = multiprocessing.process.BaseProcess
        start = base.start
        collector = self

        def start_watched(process: Any) -> None:
            collector.spawned.add(collector.context)
            start(process)

        base.start = start_watched  # type: ignore[method-assign,assignment]

    def _starts_xdist_worker(self, args: tuple[Any, ...]) -> bool:
        """pytest-xdist's controller starting a worker (execnet's bootstrap): no test's
        doing, and the worker's own collector sees what its tests spawn. Any other child the
        controller starts (a hook's code generator) stays a spawn of the whole session."""
        if "PYTEST_XDIST_WORKER" in os.environ or self.config is None:
            return False
        if not self.config.pluginmanager.has_plugin("dsession"):
            return False
        argv = args[1] if len(args) > 1 else None
        return isinstance(argv, list | tuple) and EXECNET_BOOTSTRAP in map(str, argv)

    def _relative(self, path: str) -> str | None:
        if not path.endswith(".py"):
            return None
        try:
            return Path(path).resolve().relative_to(self.root).as_posix()
        except (ValueError, OSError):
            return None

    def _hand_token(self, event: str, args: tuple[Any, ...]) -> bool:
        """Name the child about to start, through its environment, so that what it runs is
        charged to this context; False when it cannot be named (a fork, an environment
        without Guard's ``PYTHONPATH``): then the context stays a spawner."""
        if event not in EXEC_ENV and event != "os.system":
            return False
        index = EXEC_ENV.get(event)
        env = args[index] if index is not None and len(args) > index else None
        token = uuid.uuid4().hex
        if env is None:
            os.environ[TOKEN] = token
            self._token_set = True
        elif type(env) is dict and CHILD_SITE in str(env.get("PYTHONPATH", "")):
            env[TOKEN] = token
        else:
            return False
        self.children[token] = self.context
        return True

    def _switch(self, label: str, restart: bool = True, settle: bool = True) -> str:
        if self._token_set:  # a spawn that asks no audit (multiprocessing) is not named
            self._token_set = False
            os.environ.pop(TOKEN, None)
        if settle and self.swapper is not None and self.swapper.tracker.unsettled:
            self.swapper.tracker.settle(reopen=False)
        previous = self.context
        self.context = label
        if self.tracer is not None:
            self.tracer.switch(label, restart)
        elif self.lines is not None:
            self.lines.switch(self.cov, label)
        else:
            self.cov.switch_context(label)
        return previous

    # A functools fill starts and ends without settling the dict fills under way: the
    # segment it interrupts is part of them whether they end now or at the next watched
    # look (which is as wide, or narrower when that look cuts a new segment), and looking
    # up the stack at each of tens of thousands of fills costs seconds.

    def _enter_fill(self, label: str) -> str:
        return self._switch(label, settle=False)

    def _resume(self, label: str, fill: str) -> None:
        """Back to ``label`` from a cache fill it consumed. ``sys.monitoring`` is not
        re-armed (a re-arm walks every running frame: on astroid, a fill costs two, and they
        took half the collector's time): a line the fill saw stays unseen in ``label``, which
        is charged the fill's lines anyway, and so is ``<own>LABEL`` (what a test, fixture or
        import ran itself, which a dict entry it writes is charged)."""
        if self.tracer and self.swapper and not label.startswith(_CHARGED_ONLY):
            self.memo.consumed[OWN + label].add(fill)
        self._switch(label, restart=False, settle=False)

    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        if event not in _HEARD:  # most events (id(), frame looks): one line under a tracer
            return
        if event in SPAWNS:
            if self._starts_xdist_worker(args):
                os.environ.pop(TOKEN, None)  # a worker measures itself, as no one's child
            elif (
                self.context not in self.spawned
                and runs_python(event, args)
                and not self._hand_token(event, args)
            ):
                self.spawned.add(self.context)
            return
        if event not in AUDITED or not args:
            return
        target = args[0]
        if event == "glob.glob" and isinstance(target, str):
            target = target.split("*", 1)[0].split("?", 1)[0].rsplit("/", 1)[0] or "."
        if event != "open":
            caller = _caller()
            if "importlib" in caller or f"{os.sep}_pytest{os.sep}" in caller:
                return  # imports and pytest's collection list folders: not the tests' doing
            if target is None:
                target = "."  # os.listdir() lists the working directory
        if not isinstance(target, str | bytes | os.PathLike):
            return
        try:
            path = Path(os.fsdecode(target))
            if path.suffix in (".py", ".pyc"):
                return
            rel = (
                (path if path.is_absolute() else Path.cwd() / path).resolve().relative_to(self.root)
            )
        except (ValueError, OSError):
            return
        first = rel.parts[0] if rel.parts else ""
        if first in (".git", ".guard", ".venv", "__pycache__") or "__pycache__" in rel.parts:
            return
        # a listed directory is evidence too ("dir/"): a file added to it may change the test
        key = rel.as_posix() if event == "open" else (rel.as_posix().rstrip("./") + "/")
        self.opened[self.context].add(key)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_make_collect_report(self, collector: Any) -> Any:
        previous = self._switch(COLLECT + self._repo_id(collector.nodeid))
        yield
        self._switch(previous)
        self.reflection.bind_outside()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef: Any, request: Any) -> Any:
        label = self._fixture_label(fixturedef)
        previous = self._switch(label)
        yield
        self._owner_done(label)
        self._switch(previous)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: Any) -> None:
        # progress for the parent: the number of tests this process will run
        (self.out / f"total-{self.worker}").write_text(str(len(session.items)))

    # first: what the session collected, before any plug-in (Guard's, -k) deselects
    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, config: Any, items: list[Any]) -> None:
        self.collected = [self._repo_id(item.nodeid) for item in items]
        wanted = _measured_ids()
        if not self.shard and wanted is None:
            return
        if wanted is not None:
            missing = unmatched(wanted, self.collected)
            if missing:  # as pytest answers these ids on its command line: a usage error
                raise pytest.UsageError(f"not found: {' '.join(missing[:5])}")
        keep: list[Any] = []
        drop: list[Any] = []
        for item in items:
            nodeid = self._repo_id(item.nodeid)
            if wanted is not None:
                kept = belongs_to(nodeid, wanted)
            else:
                assert self.shard is not None
                index, count = self.shard
                file = nodeid.split("::", 1)[0]
                kept = sum(file.encode()) % count == index - 1  # by file: module fixtures stay
            (keep if kept else drop).append(item)
        items[:] = keep
        if drop:
            config.hook.pytest_deselected(items=drop)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> Any:
        nodeid = self._repo_id(item.nodeid)
        info = getattr(item, "_fixtureinfo", None)
        fixtures = set()
        if info is not None:
            for name in item.fixturenames:
                for fixturedef in info.name2fixturedefs.get(name, ()):
                    fixtures.add(self._fixture_label(fixturedef))
        path = Path(str(item.path)).resolve()
        try:
            file = path.relative_to(self.root).as_posix()
        except ValueError:
            file = path.as_posix()
        self.tests[nodeid] = {
            "file": file,
            "doctest": type(item).__module__ == "_pytest.doctest",
            "fixtures": sorted(fixtures),
            "outcome": "passed",
            "duration_ms": 0.0,
            "message": "",
        }
        previous = self._switch(nodeid)
        yield
        self._owner_done(nodeid)
        self._switch(previous)
        self.reflection.check()

    def _repo_id(self, nodeid: str) -> str:
        """A node id relative to the repository's root, not pytest's rootdir (a project in a
        subfolder of a monorepo runs from its own folder)."""
        if self._prefix is None:
            rootdir = Path(str(self.config.rootpath)).resolve() if self.config else self.root
            try:
                relative = rootdir.relative_to(self.root).as_posix()
            except ValueError:
                relative = "."
            self._prefix = "" if relative == "." else relative
        if not self._prefix:
            return nodeid
        return f"{self._prefix}/{nodeid}" if nodeid else self._prefix

    def _fixture_label(self, fixturedef: Any) -> str:
        return f"{FIXTURE}{self._repo_id(fixturedef.baseid)}::{fixturedef.argname}"

    def _owner_done(self, label: str) -> None:
        if self.swapper is not None:
            self.swapper.tracker.owner_done(label)

    def pytest_runtest_logreport(self, report: Any) -> None:
        self.reflection.check()  # after each phase: a wrapper a fixture replaced is back by now
        self.reflection.bind_outside()
        if report.when == "teardown":  # one byte per finished test: the parent's progress bar
            with open(self.out / f"done-{self.worker}", "a") as done:
                done.write(".")
        test = self.tests.get(self._repo_id(report.nodeid))
        if test is not None:
            fold_phase(test, report)

    def pytest_sessionfinish(self, session: Any, exitstatus: int) -> None:
        if self.swapper is not None:
            self.swapper.tracker.finish()
        self._switch("<end>")
        self.memo.uninstall()
        unrecorded = self.reflection.unrecorded(sys.modules)
        self.reflection.uninstall()
        lines: dict[str, dict[str, list[int]]] = {}
        if self.tracer is not None:
            self.tracer.stop()
            lines = self.tracer.dump()
        elif self.lines is not None:
            self.cov.stop()
            self.cov._collector.flush_data()  # what ran since the last switch
            lines = self.lines.dump()
        else:
            self.cov.stop()
            self.cov.save()
        payload = {
            "root": str(self.root),
            "exitstatus": int(exitstatus),
            "tests": self.tests,
            "opened": {ctx: sorted(paths) for ctx, paths in self.opened.items()},
            "preloaded": self.preloaded,
            "spawned": sorted(self.spawned),
            "children": self.children,
            "consumed": {
                ctx: sorted(list(labels)) for ctx, labels in list(self.memo.consumed.items())
            },
            "watched": self._watched(),
            "reflected": self.reflection.dump(),
            "reflect": {"active": self.reflection.active, "unrecorded": unrecorded},
            "lines": lines,
            "finished": time.time(),
        }
        if self.collected is not None:
            payload["collected"] = self.collected
        (self.out / f"tests-{self.worker}.json").write_text(json.dumps(payload), encoding="utf-8")

    def _watched(self) -> dict[str, Any]:
        if self.swapper is None:
            return {}
        tracker = self.swapper.tracker
        return {"dicts": self.swapper.swapped, "segments": tracker.opened, "fills": tracker.fills}


def _measured_ids() -> set[str] | None:
    """The ids to measure when the whole suite is collected but only some tests run (a
    refresh): collecting every test module runs the import-time code a whole run shares."""
    path = os.environ.get(MEASURED_IDS)
    if not path:
        return None
    return {line for line in Path(path).read_text(encoding="utf-8").splitlines() if line}


def pytest_addoption(parser: Any) -> None:
    parser.addoption("--guard-shard", default=None, help="K/N: run the K-th of N slices.")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: Any, parser: Any, args: list[str]) -> None:
    # Start measuring before conftest.py files are imported.
    out = os.environ.get("GUARD_COLLECT_OUT")
    root = os.environ.get("GUARD_REPO")
    if not out or not root:
        return
    shard = None
    for i, arg in enumerate(args):
        value = (
            arg.split("=", 1)[1]
            if arg.startswith("--guard-shard=")
            else (args[i + 1] if arg == "--guard-shard" and i + 1 < len(args) else None)
        )
        if value:
            k, _, n = value.partition("/")
            shard = (int(k), int(n))
    collector = GuardCollector(Path(root).resolve(), Path(out), shard)
    collector.config = early_config
    early_config.pluginmanager.register(collector, "guard-collector")
