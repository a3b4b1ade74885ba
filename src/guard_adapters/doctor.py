"""``guard doctor``: each thing Guard needs, checked, with a fix for what fails."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import attrs

from guard_core.errors import GuardError


@attrs.frozen
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


def _servers() -> Check:
    from guard_adapters.falkordb.embedded import running_servers

    servers = running_servers()
    listed = "; ".join(f"{s.data_dir} (pid {s.pid}, {s.rss_mb:.0f} MB)" for s in servers)
    return Check(
        "embedded servers",
        True,
        f"{len(servers)} running on this machine" + (f": {listed}" if listed else ""),
    )


def _persistence(store: object) -> Iterator[Check]:
    facts_of = getattr(store, "server_facts", None)
    if facts_of is None:  # another store adapter
        return
    try:
        facts = facts_of()
    except GuardError as exc:
        yield Check("server persistence", False, exc.message, exc.hint or "")
        return
    version = f"Redis {facts.version or '?'}, FalkorDB module {facts.graph_module or '?'}"
    persists = facts.persists
    if persists is None:
        yield Check("server persistence", True, f"{version}; CONFIG is not allowed: unknown")
        return
    detail = f"{version}; RDB snapshots {facts.save or 'off'}, AOF {facts.appendonly or 'no'}"
    yield Check(
        "server persistence",
        persists,
        detail if persists else f"{detail}: a restart loses all evidence",
        "" if persists else "set `save 60 1` (or `appendonly yes`) in the server's configuration",
    )


def _bases(store: object, keep: int) -> Iterator[Check]:
    from guard_core.ports import EvidenceBases

    if not isinstance(store, EvidenceBases):
        return
    try:
        bases = store.evidence_bases()
    except GuardError as exc:
        yield Check("evidence bases", False, exc.message, exc.hint or "")
        return
    complete = [b for b in bases if b.complete]
    choice = getattr(store, "choice", None)
    reading = f"; this clone reads {choice.reason}" if choice and choice.sha else ""
    yield Check(
        "evidence bases",
        bool(complete),
        f"{len(bases)} kept (retention {keep}), {len(complete)} complete{reading}",
        "guard ingest-coverage on a commit this clone has (CI on main)",
    )


def run_checks(repo: Path) -> Iterator[Check]:
    from guard_adapters.falkordb.plugin import graph_name
    from guard_adapters.git.repo import head_sha, repo_root
    from guard_adapters.workspace import open_guard

    yield _servers()  # this machine's, whatever the repository's state
    try:
        root = repo_root(Path(repo).resolve())
        yield Check("git repository", True, str(root))
    except GuardError as exc:
        yield Check("git repository", False, exc.message, "run `git init` and commit")
        return
    try:
        sha = head_sha(root)
        yield Check("commits", True, f"HEAD is {sha[:12]}")
    except GuardError as exc:
        yield Check("commits", False, exc.message, "commit once")
        return
    try:
        ws = open_guard(root, read_only=True, warn=False)
    except GuardError as exc:
        yield Check("configuration", False, exc.message, exc.hint or "")
        return
    if ws.settings.config_problems:
        problems = "; ".join(ws.settings.config_problems)
        yield Check(
            "configuration",
            False,
            f"{problems}; the checks below use the defaults",
            "fix pyproject.toml or the GUARD_* variable",
        )
    else:
        yield Check("configuration", True, "[tool.guard] and GUARD_* read")
    with ws:
        mode = (
            "server " + ws.settings.falkordb_url.split("@")[-1]
            if ws.settings.falkordb_url
            else "embedded"
        )
        try:
            stats = ws.store.stats()
            info = ws.store.ingest_info()
        except GuardError as exc:
            yield Check("FalkorDB", False, f"{mode}: {exc.message}", exc.hint or "")
            return
        yield Check("FalkorDB", True, f"{mode}, graph {graph_name(ws.settings)}")
        yield from _persistence(ws.store)
        yield from _bases(ws.store, ws.settings.kept_bases)
        yield Check("schema version", True, "matches this Guard")
        yield Check(
            "static index",
            stats.functions > 0,
            f"{stats.files} files, {stats.functions} functions",
            f"guard ingest-static {root} --include-tests",
        )
        yield Check(
            "coverage evidence",
            stats.covered_by > 0 and info.coverage_complete,
            f"{stats.tests} tests, {stats.covered_by} COVERED_BY edges"
            + ("" if info.coverage_complete else " (no complete ingest)"),
            f"guard ingest-coverage {root}",
        )
        if info.coverage_sha:
            fresh = info.coverage_sha == sha
            yield Check(
                "evidence freshness",
                fresh,
                f"evidence from {info.coverage_sha[:12]}, HEAD is {sha[:12]}",
                "" if fresh else f"guard ingest-coverage {root} (or `guard run` keeps it fresh)",
            )
