"""What the collector hands the ingest: its ``tests-*.json`` files (the main process and every
pytest-xdist worker), read into one typed record. A part missing a field contributes nothing to
it; a part without the reflection record turns recording off for the whole run."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs


@attrs.frozen
class TestRecord:
    """One collected test as the collector saw it run."""

    __test__ = False  # not a pytest test class

    fixtures: tuple[str, ...] = ()
    doctest: bool = False
    outcome: str = "passed"
    duration_ms: float = 0.0
    message: str = ""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TestRecord:
        return cls(
            fixtures=tuple(data.get("fixtures", ())),
            doctest=bool(data.get("doctest")),
            outcome=str(data.get("outcome", "passed")),
            duration_ms=float(data.get("duration_ms", 0.0)),
            message=str(data.get("message", "")),
        )


@attrs.define
class CollectorPayload:
    """Per context label (a test id, a fixture, a shared import...): what it opened, the cache
    fills it consumed, the lines the collector kept itself and the names its reflective calls
    looked up (by file and line); run-wide: the tests, the measured children by token, the
    contexts that started processes no collector saw, and the modules loaded before measuring."""

    tests: dict[str, TestRecord] = attrs.field(factory=dict)
    opened: dict[str, list[str]] = attrs.field(factory=dict)
    preloaded: list[str] = attrs.field(factory=list)
    spawned: list[str] = attrs.field(factory=list)
    consumed: dict[str, list[str]] = attrs.field(factory=dict)
    children: dict[str, str] = attrs.field(factory=dict)
    lines: dict[str, dict[str, list[int]]] = attrs.field(factory=dict)
    reflected: dict[str, dict[str, dict[str, list[str]]]] = attrs.field(factory=dict)
    # whether every process recorded reflective calls (None: no process said yet)
    reflect_active: bool | None = None
    unrecorded: list[str] = attrs.field(factory=list)  # files whose import ran unrecorded
    # the run's collection, the tests it deselected too (None: no process reported one)
    collected: frozenset[str] | None = None

    @classmethod
    def read(cls, out: Path) -> CollectorPayload:
        """The collector's files in ``out``, merged."""
        payload = cls()
        for result in sorted(out.glob("tests-*.json")):
            payload.add(json.loads(result.read_text(encoding="utf-8")))
        return payload

    def add(self, part: Mapping[str, Any]) -> None:
        """Merge one process's file."""
        self.tests.update(
            {nodeid: TestRecord.from_json(info) for nodeid, info in part.get("tests", {}).items()}
        )
        self.children.update(part.get("children", {}))
        if "collected" in part:  # every pytest-xdist worker collects the whole suite
            self.collected = frozenset((*(self.collected or ()), *part["collected"]))
        self.spawned = sorted({*self.spawned, *part.get("spawned", ())})
        self.preloaded = sorted({*self.preloaded, *part.get("preloaded", ())})
        for ctx, labels in part.get("consumed", {}).items():
            self.consumed.setdefault(ctx, []).extend(labels)
        for ctx, paths in part.get("opened", {}).items():
            self.opened.setdefault(ctx, []).extend(paths)
        for ctx, files in part.get("lines", {}).items():
            for rel, lines in files.items():
                self.lines.setdefault(ctx, {}).setdefault(rel, []).extend(lines)
        self._add_reflected(part)

    def _add_reflected(self, part: Mapping[str, Any]) -> None:
        """The names by context, file and line; recording counts as on only where every
        process had it on."""
        for ctx, files in part.get("reflected", {}).items():
            for rel, by_line in files.items():
                into = self.reflected.setdefault(ctx, {}).setdefault(rel, {})
                for line, names in by_line.items():
                    into[line] = sorted({*into.get(line, ()), *names})
        reflect = part.get("reflect", {})
        active = bool(reflect.get("active"))
        self.reflect_active = (
            active if self.reflect_active is None else self.reflect_active and active
        )
        self.unrecorded = sorted({*self.unrecorded, *reflect.get("unrecorded", ())})
