"""An agent's edit-check-run loop with Guard's Python API.

    python examples/agent_loop.py REPO FILE OLD NEW

applies one edit (replace OLD by NEW in FILE), asks Guard which tests it needs and why, runs
them, and undoes the edit when they fail, the way an agent would retry. Exit status: 0 when the
edit stands, 1 when it was rolled back.
"""

from __future__ import annotations

import sys
from pathlib import Path

from guard_core import Guard, Level


def try_edit(repo: Path, file: str, old: str, new: str) -> bool:
    path = repo / file
    original = path.read_text(encoding="utf-8")
    path.write_text(original.replace(old, new, 1), encoding="utf-8")
    with Guard.open(repo) as guard:  # one graph connection for the whole loop
        decision = guard.check()
        if decision.level is Level.RUN_ALL:
            print(f"guard: whole suite ({'; '.join(o.detail for o in decision.overrides)})")
        for test in decision.tests:
            print(f"guard: {test} <- {', '.join(r.text for r in decision.reasons[test])}")
        report = guard.run(stream=False)
    if report.exit_code == 0:
        print(f"edit kept: {len(decision.tests)} selected tests pass")
        return True
    path.write_text(original, encoding="utf-8")
    print(f"edit rolled back: {', '.join(report.failed) or 'pytest could not run'}")
    return False


if __name__ == "__main__":
    repo, file, old, new = sys.argv[1:5]
    sys.exit(0 if try_edit(Path(repo), file, old, new) else 1)
