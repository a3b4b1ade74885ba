"""The project-instruction files agents read: ``AGENTS.md`` (Codex, OpenCode, and others) and
Cursor's rules file. Guard owns one marked section; everything else in the file is kept."""

from __future__ import annotations

import re
from pathlib import Path

from guard_adapters.files import read_text, write_atomic

BEGIN = "<!-- guard:begin -->"
END = "<!-- guard:end -->"

SECTION = f"""{BEGIN}
## Tests: run Guard before you report completion

This repository uses [Guard](https://pypi.org/project/guard-graph/) to pick the pytest tests
an edit can affect. Before you say a task is done:

1. Run `guard run` from the repository root. It diffs the working tree against the last
   ingest, runs only the tests the change needs (the whole suite when its evidence is thin),
   and exits 0 when they pass, 1 when a test fails, 2 when it could not run.
2. On exit 1, fix the code and run it again. Do not delete tests, add `skip`/`xfail`, or weaken
   assertions to make it pass: Guard reports such test edits to the reviewer.
3. `guard check --json` shows the decision without running anything: `level` (`subset`,
   `medium`, `run-all`), `tests`, and `reasons` (which changed function selected each test).
{END}
"""

CURSOR_FRONTMATTER = """---
description: Run Guard's selected tests before reporting completion
alwaysApply: true
---

"""


def upsert_section(path: Path, section: str = SECTION, header: str = "") -> bool:
    """Write Guard's section into ``path`` (replacing an older one); True when it changed."""
    old = read_text(path)
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END) + r"\n?", re.DOTALL)
    if pattern.search(old):
        new = pattern.sub(lambda _: section, old, count=1)
    elif old:
        new = old.rstrip("\n") + "\n\n" + section
    else:
        new = header + section
    if new == old:
        return False
    write_atomic(path, new)
    return True


def write_agents_md(repo: Path) -> bool:
    return upsert_section(repo / "AGENTS.md", header="# Instructions for coding agents\n\n")


def write_cursor_rule(repo: Path) -> bool:
    return upsert_section(repo / ".cursor" / "rules" / "guard.mdc", header=CURSOR_FRONTMATTER)
