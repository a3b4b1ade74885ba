"""The collector's two line-tracing back-ends, both keyed by the context label they record
under: coverage.py's tracer (Python 3.10 and 3.11) and a ``sys.monitoring`` tool (3.12+),
armed only for code objects of the repository."""

from __future__ import annotations

import operator
import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from guard_adapters.pytest.identity import address
from guard_adapters.pytest.labels import SESSION

_HOLDS_LINES = operator.itemgetter(1)  # (file, its line set): the set is not empty
SKIP_PARTS = frozenset({".git", ".guard", ".venv", "venv", "site-packages", "__pycache__"})


class LineRecorder:
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
            if SKIP_PARTS.intersection(rel.split(os.sep)):
                rel = None
        self.files[name] = rel
        return rel

    def dump(self) -> dict[str, dict[str, list[int]]]:
        return {
            ctx: {rel: sorted(lines) for rel, lines in files.items()}
            for ctx, files in self.seen.items()
        }


class CoverageLines(LineRecorder):
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

    def switch(self, cov: Any, label: str) -> None:
        """Switch coverage.py's context to ``label``, handing over the lines its tracer saw
        since the last switch. coverage's own switch copies the line set of every file it
        has ever seen, empty or not (7.18: 0.2 ms a switch on networkx's 600 modules, where
        a cache fill switches twice: most of the run); this takes only the sets that hold
        lines, and leaves every set in place, as coverage does, for the frames recording
        into it. Unless the tracer's data is what this expects, coverage switches."""
        inner = getattr(cov, "_collector", None)
        data = getattr(inner, "data", None)
        if getattr(inner, "covdata", None) is not self or not isinstance(data, dict):
            cov.switch_context(label)
            return
        taken: dict[str, set[int]] = {}
        # the files with lines, picked in C: no line event per file, no other thread between
        for name, live in dict(filter(_HOLDS_LINES, data.items())).items():
            if type(live) is not set:  # another coverage.py: it flushes the rest itself
                self.add_lines(taken)
                cov.switch_context(label)
                return
            snapshot = live.copy()
            live.difference_update(snapshot)  # what another thread added meanwhile stays
            taken[name] = snapshot
        self.add_lines(taken)
        self.set_context(label)


class MonitoringTracer(LineRecorder):
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
            self.armed[address(code)] = code
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


def use_monitoring() -> bool:
    choice = os.environ.get("GUARD_COLLECTOR", "auto")
    return choice == "monitoring" or (choice == "auto" and sys.version_info >= (3, 12))
