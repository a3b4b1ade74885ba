"""``guard init``: everything a repository needs for Guard, idempotently.

Finds the interpreter that runs the repo's tests, starts the embedded FalkorDB, ingests the
static structure and per-test evidence (skipped when the evidence already matches HEAD and the
environment), ignores ``.guard/`` in git, and installs the chosen agent integrations.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

import attrs

from guard_adapters.agents.claude import HOOK_COMMAND, merge_settings
from guard_adapters.agents.instructions import write_agents_md, write_cursor_rule
from guard_adapters.files import read_text, write_atomic
from guard_core.errors import GuardError

AGENTS = ("claude", "codex", "cursor", "opencode")
HOOK_TIMEOUT = 600  # seconds Claude Code gives the Stop hook; the run budget stays below it


@attrs.define
class InitReport:
    done: list[str] = attrs.field(factory=list)  # what changed
    kept: list[str] = attrs.field(factory=list)  # what was already in place
    failed: list[str] = attrs.field(factory=list)  # what could not be done, and why

    def note(self, changed: bool, what: str) -> None:
        (self.done if changed else self.kept).append(what)


def guard_command() -> str:
    """How hooks should call this Guard: the script next to this interpreter when it exists
    (an agent's shell may not have the virtualenv activated)."""
    script = Path(sys.executable).parent / "guard"
    if script.exists():
        return str(script)
    return shutil.which("guard") or "guard"


def ignore_guard_dir(repo: Path) -> bool:
    gitignore = repo / ".gitignore"
    text = read_text(gitignore)
    if any(
        line.strip() in (".guard", ".guard/", "/.guard", "/.guard/") for line in text.splitlines()
    ):
        return False
    write_atomic(gitignore, text + ("" if not text or text.endswith("\n") else "\n") + ".guard/\n")
    return True


def install_agents(repo: Path, agents: Iterable[str], report: InitReport) -> None:
    chosen = set(AGENTS if "all" in agents else agents)
    if "claude" in chosen:
        command = f"{guard_command()} {HOOK_COMMAND}"
        changed = merge_settings(repo / ".claude" / "settings.json", command, HOOK_TIMEOUT)
        report.note(changed, "Claude Code Stop hook in .claude/settings.json")
    if chosen & {"codex", "opencode"}:
        report.note(write_agents_md(repo), "Guard section in AGENTS.md (Codex, OpenCode)")
    if "cursor" in chosen:
        report.note(write_cursor_rule(repo), "Cursor rule in .cursor/rules/guard.mdc")


Ingest = Callable[[], str | None]  # runs the ingest when needed; what it did, or None if current


def initialise(repo: Path, agents: Iterable[str], ingest: Ingest) -> InitReport:
    """The integrations are installed even when the ingest fails: without evidence every
    decision is run-all, which is safe, and a later `guard init` fills the evidence in."""
    report = InitReport()
    report.note(ignore_guard_dir(repo), ".guard/ in .gitignore")
    install_agents(repo, agents, report)
    try:
        did = ingest()
    except GuardError as exc:
        report.failed.append(f"ingest: {exc.message}" + (f" ({exc.hint})" if exc.hint else ""))
        return report
    report.note(did is not None, did or "evidence is current (HEAD and environment unchanged)")
    return report
