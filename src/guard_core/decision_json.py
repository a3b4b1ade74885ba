"""A ``guard.decision/1`` object back into the :class:`~guard_core.model.Decision` whose
:meth:`~guard_core.model.Decision.to_json` wrote it (as much of it as the object keeps)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from guard_core.bases import BaseChoice
from guard_core.model import (
    ChangedFile,
    ChangedRegion,
    ChangeKind,
    ChangeSet,
    Decision,
    FileKind,
    FileRole,
    IntegrityFlag,
    Level,
    Override,
    Reason,
    RegionKind,
    TrustComponents,
    split_id,
)


def decision_from_json(data: object) -> Decision:
    """The decision ``data`` stands for; ``ValueError`` for anything but a well-formed
    ``guard.decision/1`` object."""
    if not isinstance(data, Mapping) or data.get("schema") != Decision.SCHEMA:
        raise ValueError("not a guard.decision/1 object")
    try:
        return _decode(data)
    except (KeyError, TypeError, AttributeError, OverflowError) as exc:
        raise ValueError(f"malformed guard.decision/1 object: {exc!r}") from exc


def _decode(data: Mapping[str, Any]) -> Decision:
    tests = data["tests"]
    if tests is not None and not (
        isinstance(tests, list) and all(isinstance(t, str) for t in tests)
    ):
        raise TypeError(f"tests must be a list of ids or null, got {tests!r}")
    # a whole-suite run-all keeps the tests the graph knows as the keys of its reasons
    selected = tuple(data["reasons"] if tests is None else tests)
    changed = data["changed"]
    components = data["components"]
    base = data.get("evidence_base")
    return Decision(
        level=Level(data["level"]),
        trust=float(data["trust"]),
        components=TrustComponents(
            float(components["evidence_ratio"]),
            float(components["freshness"]),
            float(components["uncertain_ratio"]),
        ),
        tests=selected,
        reasons={
            t: tuple(
                Reason(str(r["rule"]), str(r["via"]), r.get("confidence"))
                for r in data["reasons"].get(t, ())
            )
            for t in selected
        },
        total_tests=int(data["total_tests"]),
        overrides=tuple(Override(str(o["kind"]), str(o["detail"])) for o in data["overrides"]),
        change_set=ChangeSet(
            base=str(changed["base"]),
            files=tuple(
                ChangedFile(f["path"], FileKind(f["kind"]), FileRole(f["role"]), f.get("old_path"))
                for f in changed["files"]
            ),
            regions=tuple(
                ChangedRegion(
                    r["id"],
                    split_id(r["id"])[0],
                    ChangeKind(r["kind"]),
                    RegionKind(r["region"]),
                    old_id=r.get("old_id"),
                    dynamic_dispatch=bool(r.get("dynamic_dispatch", False)),
                )
                for r in changed["functions"]
            ),
            problems=tuple(str(p) for p in changed["problems"]),
            integrity=tuple(
                IntegrityFlag(str(i["file"]), str(i["kind"]), str(i["detail"]))
                for i in data.get("integrity", ())
            ),
        ),
        skipped_summary=str(data["skipped"]),
        elapsed_ms=float(data["elapsed_ms"]),
        whole_suite=tests is None,
        evidence=None if base is None else BaseChoice(str(base["sha"] or ""), str(base["reason"])),
    )
