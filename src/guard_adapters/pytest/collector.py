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
import shutil
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from guard_adapters.pytest.child import TOKEN
from guard_adapters.pytest.containers import ContainerSwapper, FillTracker
from guard_adapters.pytest.labels import (
    COLLECT,
    FILL,
    FIXTURE,
    IMPORT,
    MEMO,
    OWN,
    SEGMENT,
    SESSION,
)
from guard_adapters.pytest.memo import MemoWatcher
from guard_adapters.pytest.reporter import fold_phase


def _fixture_label(fixturedef: Any) -> str:
    return f"{FIXTURE}{fixturedef.baseid}::{fixturedef.argname}"


_AUDITED = frozenset({"open", "os.listdir", "os.scandir", "glob.glob"})
_SPAWNS = frozenset(
    {
        "subprocess.Popen",
        "os.fork",
        "os.forkpty",
        "os.posix_spawn",
        "os.spawn",
        "os.exec",
        "os.system",
    }
)


# spawns that start a program with an environment Guard can hand a token to (position of the
# environment in the audit arguments; None: the process's own)
_EXEC_ENV = {"subprocess.Popen": 3, "os.posix_spawn": 2, "os.exec": 2, "os.spawn": 3}
_CHILD_SITE = str(Path(__file__).resolve().parent / "child_site")
_IDLE_WATCHDOG = "guard_adapters.falkordb.idle"
_EXECNET_BOOTSTRAP = "import sys;exec(eval(sys.stdin.readline()))"  # execnet's popen gateway
_LAUNCHERS = frozenset(
    {
        "sh",
        "bash",
        "dash",
        "zsh",
        "env",
        "nohup",
        "xargs",
        "make",
        "tox",
        "nox",
        "uv",
        "pipx",
        "pdm",
        "poetry",
        "hatch",
    }
)


def _runs_python(event: str, args: tuple[Any, ...]) -> bool:
    """Whether a process-creation event may run Python code of the repository: a fork, or a
    program that is an interpreter, lives beside it (console scripts) or starts with a Python
    shebang. ``os.system`` runs a shell line: counted, it cannot be told apart."""
    if event in ("os.fork", "os.forkpty", "os.system"):
        return True
    try:
        return _names_python(args)
    except Exception:  # an audit hook must never fail the test; unknown counts as Python
        return True


def _names_python(args: tuple[Any, ...]) -> bool:
    argv = args[1] if len(args) > 1 else None
    program = args[0]
    if isinstance(argv, str):
        argv = argv.split()
    if isinstance(argv, list | tuple) and _IDLE_WATCHDOG in argv:
        return False  # Guard's own server watchdog, started when a check starts the server
    if program is None and isinstance(argv, list | tuple) and argv:
        program = argv[0]
    if not isinstance(program, str | bytes | os.PathLike):
        return True
    name = os.fsdecode(program)
    if "python" in os.path.basename(name):
        return True
    words = (
        [os.fsdecode(a) for a in argv if isinstance(a, str | bytes)]
        if isinstance(argv, list | tuple)
        else []
    )
    if os.path.basename(name) in _LAUNCHERS or any("python" in w for w in words):
        return True  # a shell line, `env python3`, `bash run.sh`: may well start Python
    found = name if os.sep in name else (shutil.which(name) or "")
    if not found:
        return False
    if os.path.dirname(os.path.realpath(found)) == os.path.dirname(
        os.path.realpath(sys.executable)
    ) or os.path.dirname(found) == os.path.dirname(sys.executable):
        return True
    try:
        with open(found, "rb") as script:
            return b"python" in script.readline(200)
    except OSError:
        return False


_CHARGED_ONLY = (MEMO, SEGMENT, FILL)  # labels of parts of a context
_SKIP_PARTS = frozenset({".git", ".guard", ".venv", "venv", "site-packages", "__pycache__"})


class _LineRecorder:
    """Lines executed per context, by repository-relative path."""

    def __init__(self, root: Path) -> None:
        self.roots = tuple(dict.fromkeys((str(root) + os.sep, str(root.resolve()) + os.sep)))
        self.context = SESSION
        self.seen: dict[str, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
        self.files: dict[str, str | None] = {}  # a measured file name -> relative path, or None

    def _relative(self, name: str) -> str | None:
        rel = None
        root = next((r for r in self.roots if name.startswith(r)), None)
        if root is not None and name.endswith(".py"):
            rel = name[len(root) :]
            if _SKIP_PARTS.intersection(rel.split(os.sep)):
                rel = None
        self.files[name] = rel
        return rel

    def dump(self) -> dict[str, dict[str, list[int]]]:
        return {
            ctx: {rel: sorted(lines) for rel, lines in files.items()}
            for ctx, files in self.seen.items()
        }


class _CoverageLines(_LineRecorder):
    """Takes coverage.py's line data in place of its ``CoverageData``: coverage's collector
    hands over what its tracer saw at every context switch, and a ``CoverageData`` writes each
    hand-over to SQLite (on Flask, 6000 switches cost 1.2 s); kept in memory, it costs little.
    The part of ``CoverageData`` the collector calls: ``set_context``, ``add_lines``,
    ``add_arcs`` (never: no branch measurement) and ``add_file_tracers``."""

    def set_context(self, context: str | None) -> None:
        self.context = context or ""

    def add_lines(self, line_data: dict[str, Any]) -> None:
        for name, lines in line_data.items():
            rel = self.files[name] if name in self.files else self._relative(name)
            if rel is not None:
                self.seen[self.context][rel].update(lines)

    def add_arcs(self, arc_data: dict[str, Any]) -> None:
        raise RuntimeError("the collector measures lines, not branches")

    def add_file_tracers(self, file_tracers: dict[str, str]) -> None:
        pass


class _MonitoringTracer(_LineRecorder):
    """Python >= 3.12: records each line executed, once per context, with ``sys.monitoring``
    (a line's event is disabled after it fires and re-armed at every context switch), at a
    fraction of ``sys.settrace``'s cost; coverage.py's ``sysmon`` core cannot label contexts.

    Line events are local to the repository's code objects, armed when one first starts: a
    global line event would fire again in every line pytest and the libraries run after each
    re-arm (Flask: 4.1 -> 3.2 s for the suite, plain 2.2 s)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.mon = sys.monitoring  # type: ignore[attr-defined,unused-ignore]
        self.tool = next(t for t in range(5, 0, -1) if self.mon.get_tool(t) is None)
        self.armed: dict[int, Any] = {}  # code objects with local line events, by id
        self.mon.use_tool_id(self.tool, "guard")
        self.mon.register_callback(self.tool, self.mon.events.LINE, self._line)
        self.mon.register_callback(self.tool, self.mon.events.PY_START, self._start)
        self.mon.set_events(self.tool, self.mon.events.PY_START)
        for frame in sys._current_frames().values():  # repository code already running
            while frame is not None:
                self._start(frame.f_code, 0)
                frame = frame.f_back  # type: ignore[assignment]

    def _start(self, code: Any, offset: int) -> Any:
        name = code.co_filename
        if (self.files[name] if name in self.files else self._relative(name)) is not None:
            self.armed[id(code)] = code
            # set again at every start: measured faster on 3.12 than skipping armed code
            self.mon.set_local_events(self.tool, code, self.mon.events.LINE)
        return self.mon.DISABLE  # until the next re-arm

    def _line(self, code: Any, line: int) -> Any:
        name = code.co_filename
        rel = self.files[name] if name in self.files else self._relative(name)
        if rel is not None:
            self.seen[self.context][rel].add(line)
        return self.mon.DISABLE

    def switch(self, label: str, restart: bool = True) -> None:
        self.context = label
        if restart:
            self.mon.restart_events()

    def stop(self) -> None:
        self.mon.set_events(self.tool, 0)
        for code in self.armed.values():  # 3.12's free_tool_id leaves local events and callbacks
            self.mon.set_local_events(self.tool, code, 0)
        self.mon.register_callback(self.tool, self.mon.events.LINE, None)
        self.mon.register_callback(self.tool, self.mon.events.PY_START, None)
        self.mon.free_tool_id(self.tool)


def _use_monitoring() -> bool:
    choice = os.environ.get("GUARD_COLLECTOR", "auto")
    return choice == "monitoring" or (choice == "auto" and sys.version_info >= (3, 12))


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
        self.opened: dict[str, set[str]] = defaultdict(set)
        self.spawned: set[str] = set()  # contexts that started a Python child process
        self.children: dict[str, str] = {}  # token handed to a child -> the context it ran for
        self._token_set = False
        # children start measured (child_site/sitecustomize.py) when they keep PYTHONPATH
        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (_CHILD_SITE, os.environ.get("PYTHONPATH")) if p
        )
        os.environ.setdefault("GUARD_REPO", str(root))
        os.environ.setdefault("GUARD_COLLECT_OUT", str(out))
        self.config: Any = None  # pytest's, once registered
        # one data file per process: pytest-xdist runs the plugin in every worker
        self.worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.tracer: _MonitoringTracer | None = None
        self.cov: Any = None
        if not _use_monitoring():
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
        self.lines: _CoverageLines | None = None
        if self.cov is not None:
            self.cov.start()
            inner: Any = getattr(self.cov, "_collector", None)
            if callable(getattr(inner, "use_data", None)):  # else coverage's own data file
                self.lines = _CoverageLines(root)
                inner.use_data(self.lines, None)
            self.cov.switch_context(SESSION)
        else:
            self.tracer = _MonitoringTracer(root)
        sys.addaudithook(self._audit)
        sys.meta_path.insert(0, _ImportLabeler(self))
        self._watch_multiprocessing()
        self.memo = MemoWatcher(self._enter_fill, lambda: self.context, self._ours, self._resume)
        self.swapper: ContainerSwapper | None = None
        if os.environ.get("GUARD_COLLECT_MEMO", "1") != "0":  # 0: measure without (benchmarks)
            self.memo.install()
        if os.environ.get("GUARD_COLLECT_DICTS", "1") != "0":  # 0: without (benchmarks)
            tracker = FillTracker(self._switch, lambda: self.context, self.memo.consumed)
            self.swapper = ContainerSwapper(tracker)

    def _ours(self, filename: str) -> bool:
        rel = self._relative(filename)
        return rel is not None and not _SKIP_PARTS.intersection(rel.split("/"))

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
        return isinstance(argv, list | tuple) and _EXECNET_BOOTSTRAP in map(str, argv)

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
        if event not in _EXEC_ENV and event != "os.system":
            return False
        index = _EXEC_ENV.get(event)
        env = args[index] if index is not None and len(args) > index else None
        token = uuid.uuid4().hex
        if env is None:
            os.environ[TOKEN] = token
            self._token_set = True
        elif type(env) is dict and _CHILD_SITE in str(env.get("PYTHONPATH", "")):
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
        if event in _SPAWNS:
            if self._starts_xdist_worker(args):
                os.environ.pop(TOKEN, None)  # a worker measures itself, as no one's child
            elif (
                self.context not in self.spawned
                and _runs_python(event, args)
                and not self._hand_token(event, args)
            ):
                self.spawned.add(self.context)
            return
        if event not in _AUDITED or not args:
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
        previous = self._switch(COLLECT + collector.nodeid)
        yield
        self._switch(previous)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef: Any, request: Any) -> Any:
        label = _fixture_label(fixturedef)
        previous = self._switch(label)
        yield
        self._owner_done(label)
        self._switch(previous)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: Any) -> None:
        # progress for the parent: the number of tests this process will run
        (self.out / f"total-{self.worker}").write_text(str(len(session.items)))

    def pytest_collection_modifyitems(self, config: Any, items: list[Any]) -> None:
        if not self.shard:
            return
        index, count = self.shard
        keep: list[Any] = []
        drop: list[Any] = []
        for item in items:
            file = item.nodeid.split("::", 1)[0]
            bucket = sum(file.encode()) % count  # by file, so module fixtures stay together
            (keep if bucket == index - 1 else drop).append(item)
        items[:] = keep
        if drop:
            config.hook.pytest_deselected(items=drop)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> Any:
        nodeid = item.nodeid
        info = getattr(item, "_fixtureinfo", None)
        fixtures = set()
        if info is not None:
            for name in item.fixturenames:
                for fixturedef in info.name2fixturedefs.get(name, ()):
                    fixtures.add(_fixture_label(fixturedef))
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

    def _owner_done(self, label: str) -> None:
        if self.swapper is not None:
            self.swapper.tracker.owner_done(label)

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when == "teardown":  # one byte per finished test: the parent's progress bar
            with open(self.out / f"done-{self.worker}", "a") as done:
                done.write(".")
        test = self.tests.get(report.nodeid)
        if test is not None:
            fold_phase(test, report)

    def pytest_sessionfinish(self, session: Any, exitstatus: int) -> None:
        if self.swapper is not None:
            self.swapper.tracker.finish()
        self._switch("<end>")
        self.memo.uninstall()
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
            "lines": lines,
            "finished": time.time(),
        }
        (self.out / f"tests-{self.worker}.json").write_text(json.dumps(payload), encoding="utf-8")

    def _watched(self) -> dict[str, Any]:
        if self.swapper is None:
            return {}
        tracker = self.swapper.tracker
        return {"dicts": self.swapper.swapped, "segments": tracker.opened, "fills": tracker.fills}


class _LabelledLoader:
    """Wraps a module's loader so that executing its body runs under ``<import>NAME``."""

    def __init__(self, loader: Any, collector: GuardCollector, name: str) -> None:
        self._loader = loader
        self._collector = collector
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._loader, attr)

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        previous = self._collector._switch(IMPORT + self._name)
        try:
            self._loader.exec_module(module)
        finally:
            self._collector._switch(previous)
        if self._collector.swapper is not None:
            self._collector.swapper.module_ran(module)


class _ImportLabeler:
    """A meta-path finder that only labels: it asks the other finders, then wraps the loader
    of modules whose file is inside the repository (test modules excepted)."""

    def __init__(self, collector: GuardCollector) -> None:
        self.collector = collector

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is None:
                continue
            origin = spec.origin or ""
            loader = spec.loader
            if (
                origin.endswith(".py")
                and loader is not None
                and hasattr(loader, "exec_module")
                and self._ours(origin)
            ):
                spec.loader = _LabelledLoader(loader, self.collector, name)  # type: ignore[assignment]
            return spec
        return None

    def _ours(self, origin: str) -> bool:
        try:
            rel = Path(origin).resolve().relative_to(self.collector.root)
        except (ValueError, OSError):
            return False
        name = rel.name
        return not (name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py")


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
