"""Where a function body changed, in base-side lines, for line-level evidence.

A line diff of the two versions of one function; hunks that only touch blank or comment
lines are dropped. A change that adds, removes or edits a control-flow clause (``else``,
``elif``, ``except``, ``finally``, ``case``, ``try``) cannot be placed on one path, so the
whole function counts (no hunks) — except a one-line ``elif`` whose condition alone changed:
the condition is evaluated on that line.
"""

from __future__ import annotations

import difflib
import re

from guard_adapters.python.regions import Region
from guard_core.model import Hunk

_CLAUSE = re.compile(r"\s*(else|elif|except|finally|case|try)\b")


def _code(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


_ELIF = re.compile(r"\s*elif\b.*:\s*(#.*)?$")


def _condition_only(old_code: list[str], new_code: list[str]) -> bool:
    """One ``elif`` line replaced by another at the same indentation: only its condition
    changed, and the tests that evaluated it are the ones that executed that line."""
    return (
        len(old_code) == len(new_code) == 1
        and bool(_ELIF.match(old_code[0]))
        and bool(_ELIF.match(new_code[0]))
        and _indent(old_code[0]) == _indent(new_code[0])
    )


def function_hunks(old: Region, new: Region) -> tuple[Hunk, ...]:
    before, after = old.text.splitlines(), new.text.splitlines()
    matcher = difflib.SequenceMatcher(
        None,
        [line.rstrip() for line in before],
        [line.rstrip() for line in after],
        autojunk=False,
    )
    hunks = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        old_code = [line for line in before[i1:i2] if _code(line)]
        new_code = [line for line in after[j1:j2] if _code(line)]
        if not old_code and not new_code:
            continue
        if _condition_only(old_code, new_code):
            pass  # the condition of an `elif` kept in place runs on its own line
        elif any(_CLAUSE.match(line) for line in old_code + new_code):
            return ()
        while i1 < i2 and not _code(before[i1]):
            i1 += 1  # start at the first replaced line that can run
        opens = not old_code or (
            bool(new_code) and min(map(_indent, new_code)) < min(map(_indent, old_code))
        )
        hunks.append(Hunk(old.start + i1, old.start + i2, opens_paths=opens))
    return tuple(hunks)
