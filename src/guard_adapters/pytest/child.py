"""Measuring a Python process that a measured test starts (``python -m pkg.cli``, a console
script): the lines of the repository it runs, written at exit for the test that started it.

The collector puts ``child_site`` first on the children's ``PYTHONPATH`` and names each spawn
with a token (``GUARD_CHILD_TOKEN``); its ``sitecustomize`` calls :func:`measure` at start-up.
A child that exits without writing (killed, ``os._exit``), that starts processes of its own,
or that cannot be measured leaves its test a spawner: every change selects it, as before.
Standard library and coverage only: it runs in the target's interpreter.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

TOKEN = "GUARD_CHILD_TOKEN"
OUT = "GUARD_COLLECT_OUT"
REPO = "GUARD_REPO"
PREFIX = "child-"  # child-<token>-<pid>.json in the collector's folder


def _relative(root: Path, filename: str) -> str | None:
    if not filename.endswith(".py"):
        return None
    try:
        return Path(filename).resolve().relative_to(root).as_posix()
    except (ValueError, OSError):
        return None


class _Lines:
    """Every repository line the process runs, by sys.monitoring (3.12+) or coverage.py."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.seen: dict[str, set[int]] = defaultdict(set)
        self.files: dict[str, str | None] = {}
        self.cov: Any = None
        monitoring: Any = getattr(sys, "monitoring", None)
        self.monitoring = monitoring
        self.tool: int | None = None
        for tool in (3, 4) if monitoring is not None else ():
            try:
                monitoring.use_tool_id(tool, "guard-child")
            except ValueError:
                continue
            self.tool = tool
            monitoring.register_callback(tool, monitoring.events.LINE, self._line)
            monitoring.set_events(tool, monitoring.events.LINE)
            return
        import coverage  # 3.11 and older; a child of a measured run has it

        self.cov = coverage.Coverage(data_file=None, source=[str(root)], config_file=False)
        self.cov.start()

    def _line(self, code: Any, number: int) -> Any:
        name = code.co_filename
        rel = self.files.get(name, "")
        if rel == "":
            rel = self.files[name] = _relative(self.root, name)
        if rel is not None:
            self.seen[rel].add(number)
        return self.monitoring.DISABLE  # each line once is enough

    def stop(self) -> dict[str, list[int]]:
        if self.cov is not None:
            self.cov.stop()
            data = self.cov.get_data()
            for name in data.measured_files():
                rel = _relative(self.root, name)
                if rel is not None:
                    self.seen[rel].update(data.lines(name) or ())
        elif self.tool is not None:
            self.monitoring.set_events(self.tool, 0)
            self.monitoring.free_tool_id(self.tool)
        return {rel: sorted(lines) for rel, lines in self.seen.items()}


def measure() -> None:
    """Start measuring this process, if a measured test started it."""
    token, out, repo = os.environ.get(TOKEN), os.environ.get(OUT), os.environ.get(REPO)
    if not token or not out or not repo:
        return
    spawned: list[str] = []

    def audit(event: str, args: tuple[Any, ...]) -> None:
        if event in ("subprocess.Popen", "os.posix_spawn", "os.exec", "os.spawn", "os.system",
                     "os.fork", "os.forkpty") and not spawned:  # fmt: skip
            spawned.append(event)  # a grandchild Guard does not follow: its test stays wide

    try:
        lines = _Lines(Path(repo).resolve())
    except Exception:
        return  # nothing written: the test stays a spawner
    sys.addaudithook(audit)
    pid = os.getpid()

    def write() -> None:
        if os.getpid() != pid:
            return  # a forked copy: its parent writes
        payload = {"token": token, "lines": lines.stop(), "spawned": bool(spawned)}
        path = Path(out) / f"{PREFIX}{token}-{pid}.json"
        with contextlib.suppress(OSError):
            path.write_text(json.dumps(payload), encoding="utf-8")

    atexit.register(write)
