"""One import of the repository as a probe request describes it (``pytest_probe`` drives it
inside pytest's start-up and collection, so with the tests' ``conftest.py`` files, plug-ins,
environment and import order). The request names the repository root, the ``sys.path``
entries to put last, the modules to import once collection is done (and their paths), and an
overlay: files whose bytes (base64) are served instead of the disk's (the base commit's), so
that one interpreter, one set of paths and one loader build the old state and the new one.
The result: the digested state (``state_digest``), the exception each failing import raised,
and the repository code (and lines) that ran. Standard library only."""

from __future__ import annotations

import base64
import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import types
from collections.abc import Callable
from typing import Any

from guard_adapters.imports.loaded_state import digest_state

SPAWNS = ("subprocess.Popen", "os.posix_spawn", "os.exec", "os.spawn", "os.system", "os.fork")


class Overlay(importlib.abc.MetaPathFinder):
    """Serves the request's text for the files it names, at their own paths; and notes each
    of them that is read past it (``unserved``): run by path (``runpy.run_path``,
    ``spec_from_file_location``, ``exec(compile(open(...)))``) or read as text by the
    repository's code, and whether that code started a process (``spawned``). Those reads,
    and the child's, got the disk's bytes, not the served ones."""

    def __init__(self, sources: dict[str, bytes], inside: Callable[[str], bool]) -> None:
        self.sources = sources
        self.inside = inside
        self.unserved: set[str] = set()
        self.spawned = False  # the repository's code started a process
        self.watching = False
        self._served: list[types.CodeType] = []  # held, so that no other code takes their ids
        self._names = {os.path.basename(p) for p in sources}

    def watch(self) -> None:
        if self.sources:
            self.watching = True
            sys.addaudithook(self._audit)

    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.watching:
            return
        if event in SPAWNS:  # a child reads the disk's files, whatever it runs
            if self._read_by_repository():
                self.spawned = True
            return
        if event not in ("open", "exec"):
            return
        if event == "exec":
            code = args[0] if args else None
            if not isinstance(code, types.CodeType) or any(code is c for c in self._served):
                return
            where: Any = code.co_filename
        else:
            where = args[0] if args else None
            if not isinstance(where, (str, bytes, os.PathLike)):
                return  # a file descriptor
            where = os.fsdecode(where)
        if os.path.basename(where) not in self._names:
            return
        path = os.path.realpath(where)
        if path in self.sources and (event == "exec" or self._read_by_repository()):
            self.unserved.add(path)

    def _read_by_repository(self) -> bool:
        """Whether repository code (a module, a conftest, a test) is on the stack: pytest or
        a doctest finder reading a source for its line numbers builds no state of it."""
        frame: types.FrameType | None = sys._getframe(2)
        while frame is not None:
            if self.inside(frame.f_code.co_filename):
                return True
            frame = frame.f_back
        return False

    def served(self, code: types.CodeType | None) -> types.CodeType | None:
        if code is not None:
            self._served.append(code)
        return code

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is None:
                continue
            origin = os.path.realpath(spec.origin) if spec.origin else ""
            if origin in self.sources:
                spec.loader = TextLoader(name, origin, self.sources[origin], self)
                spec.cached = None
            return spec
        return None


class TextLoader(importlib.machinery.SourceFileLoader):
    def __init__(self, name: str, path: str, data: bytes, overlay: Overlay) -> None:
        super().__init__(name, path)
        self.data = data
        self.overlay = overlay

    def get_code(self, fullname: str) -> Any:
        return self.overlay.served(super().get_code(fullname))

    def get_data(self, path: str) -> bytes:
        if os.path.realpath(path) == os.path.realpath(self.path):
            return self.data
        return super().get_data(path)

    def path_stats(self, path: str) -> Any:
        raise OSError("served text has no bytecode cache")


class Calls:
    """What runs while importing: each code object that starts (file and qualified name) and
    each line of the repository's files, through ``sys.monitoring`` where there is one, else
    a trace function."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.ran: set[tuple[str, str]] = set()
        self.lines: dict[str, set[int]] = {}
        self.monitoring: Any = getattr(sys, "monitoring", None)
        self.tool: int | None = None
        self._inside: dict[str, bool] = {}

    def inside(self, filename: str) -> bool:
        found = self._inside.get(filename)
        if found is None:  # "<frozen ...>", "<string>": no file, whatever the folder
            real = os.path.realpath(filename) if os.path.isabs(filename) else ""
            found = self._inside[filename] = real.startswith(self.root)
        return found

    def start(self) -> None:
        if self.monitoring is None:
            sys.settrace(self._call)
            return
        free = [t for t in range(5, 0, -1) if self.monitoring.get_tool(t) is None]
        if not free:
            raise RuntimeError("no free sys.monitoring tool id")
        self.tool = free[0]
        events = self.monitoring.events
        self.monitoring.use_tool_id(self.tool, "guard-imports")
        self.monitoring.register_callback(self.tool, events.PY_START, self._started)
        self.monitoring.register_callback(self.tool, events.LINE, self._line)
        self.monitoring.set_events(self.tool, events.PY_START | events.LINE)

    def stop(self) -> None:
        if self.monitoring is None:
            sys.settrace(None)
        elif self.tool is not None:
            self.monitoring.set_events(self.tool, 0)
            self.monitoring.free_tool_id(self.tool)

    def _started(self, code: types.CodeType, offset: int) -> Any:
        self.ran.add((code.co_filename, getattr(code, "co_qualname", "")))
        return self.monitoring.DISABLE

    def _line(self, code: types.CodeType, line: int) -> Any:
        if self.inside(code.co_filename):
            self.lines.setdefault(code.co_filename, set()).add(line)
        return self.monitoring.DISABLE

    def _call(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        code = frame.f_code
        self.ran.add((code.co_filename, getattr(code, "co_qualname", "")))
        return self._traced if self.inside(code.co_filename) else None

    def _traced(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            self.lines.setdefault(frame.f_code.co_filename, set()).add(frame.f_lineno)
        return self._traced

    def inside_ran(self, failed: list[str]) -> list[str] | None:
        """``path::qualname`` of the repository code that ran; None without qualified names.
        The body of a module whose import failed (the ``failed`` paths) ran only in part."""
        if sys.version_info < (3, 11):
            return None
        out = {f"{self.rel(f)}::{q}" for f, q in self.ran if self.inside(f)}
        return sorted(out - {f"{path}::<module>" for path in failed})

    def inside_lines(self, failed: list[str]) -> dict[str, list[int]]:
        """The lines that ran per repository path, but in a file whose import failed (what
        its lines built was lost with it)."""
        out: dict[str, set[int]] = {}
        for filename, lines in self.lines.items():
            out.setdefault(self.rel(filename), set()).update(lines)
        return {path: sorted(lines) for path, lines in out.items() if path not in failed}

    def rel(self, filename: str) -> str:
        return os.path.relpath(os.path.realpath(filename), self.root).replace(os.sep, "/")


class Replay:
    """One import of the repository as the request describes it: :meth:`start` serves the
    overlay and watches what runs (from then on, pytest's start-up and collection import what
    they import), :meth:`finish` imports the requested modules not imported yet and digests
    the state."""

    def __init__(self, request: dict[str, Any]) -> None:
        self.request = request
        self.root = os.path.realpath(request["root"])
        served = request.get("overlay", {}).items()
        self.calls = Calls(self.root + os.sep)
        sources = {os.path.realpath(p): base64.b64decode(d) for p, d in served}
        self.overlay = Overlay(sources, self.calls.inside)

    def start(self) -> None:
        # after pytest's own entries: where the tests import a module from wins
        sys.path.extend(p for p in self.request.get("sys_path", []) if p not in sys.path)
        sys.meta_path.insert(0, self.overlay)
        self.overlay.watch()
        sys.dont_write_bytecode = True
        self.calls.start()

    def finish(self) -> dict[str, Any]:
        errors: dict[str, str] = {}
        for name in self.request["modules"]:
            try:
                module = importlib.import_module(name)
            except BaseException as exc:  # a failing import is a result
                errors[name] = f"{type(exc).__name__}: {exc}"
                continue
            where = os.path.realpath(getattr(module, "__file__", None) or "")
            if not where.startswith(self.root + os.sep):
                errors[name] = f"was imported from {where}, outside the repository"
        self.calls.stop()
        self.overlay.watching = False
        if self.overlay in sys.meta_path:
            sys.meta_path.remove(self.overlay)
        failed = [self.request["paths"].get(n, "") for n in errors]
        return {
            **digest_state(self.root, self.overlay.sources),
            "errors": errors,
            "ran": self.calls.inside_ran(failed),
            "lines": self.calls.inside_lines(failed),
            "unserved": sorted(self.calls.rel(p) for p in self.overlay.unserved),
            "spawned": self.overlay.spawned,
            "rewritten": rewritten_modules(),
        }


def rewritten_modules() -> list[str]:
    """The files of the modules pytest's assertion rewriter rewrote: the probe serves a
    changed module's base text past it, so these are compared apart from the changed files
    (its digest leaves them out)."""
    paths: set[str] = set()
    for finder in sys.meta_path:
        rewritten = getattr(finder, "_rewritten_names", None)
        if type(finder).__name__ == "AssertionRewritingHook" and isinstance(rewritten, dict):
            paths.update(os.path.realpath(str(path)) for path in rewritten.values())
    return sorted(paths)
