"""Claude Code's Stop hook: when the agent wants to stop, run the tests its edit needs and block
the stop while they fail.

Protocol: the hook JSON arrives on stdin (``session_id``, ``cwd``, ``stop_hook_active``, ...);
printing ``{"decision": "block", "reason": ...}`` keeps the agent working with the reason as its
next instruction; printing nothing (or a ``systemMessage`` for the human) lets it stop.

Loop guard: after blocking a tree, a re-entered stop (``stop_hook_active``) on the *same* tree
passes (with a message to the human), so the agent cannot be held forever; any change to the
tree resets it, and that tree is checked (and blocked) again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from guard_adapters.files import locked, read_text, write_atomic
from guard_adapters.git.repo import DIFF_FLAGS, git
from guard_core.api import Guard, RunReport
from guard_core.errors import GuardError, RunnerError, RunTimedOut
from guard_core.model import Decision, IntegrityFlag
from guard_core.unrun import unrun_note

STATE_FILE = "hook-claude.json"
LOCK_FILE = "hook-claude.lock"
MAX_LISTED = 10


def tree_fingerprint(repo: Path) -> str:
    """A hash of the working tree's difference from HEAD, untracked files included."""
    digest = hashlib.sha256()
    for args in (
        [
            "diff",
            *DIFF_FLAGS,
            "--binary",
            "--no-renames",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            "HEAD",
            "--",
        ],
        ["ls-files", "-z", "--others", "--exclude-standard"],
    ):
        out = git(repo, *args, check=False, binary=True)
        assert isinstance(out, bytes)
        digest.update(out)
        if args[0] == "ls-files":
            for name in filter(None, out.split(b"\0")):
                path = repo / name.decode(errors="surrogateescape")
                if path.is_file():
                    digest.update(path.read_bytes())
    return digest.hexdigest()


class HookState:
    """The last tree this hook blocked, per Claude session, in ``.guard/hook-claude.json``."""

    def __init__(self, guard_dir: Path) -> None:
        self.path = guard_dir / STATE_FILE
        self.lock_file = guard_dir / LOCK_FILE

    def _load(self) -> dict[str, Any]:
        try:
            return dict(json.loads(self.path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            return {}

    def blocked(self, session: str) -> str | None:
        return self._load().get(session)

    def remember(self, session: str, tree: str | None) -> bool:
        """Hooks of several sessions may stop at once: each update holds the lock. A state
        folder that cannot be written (a read-only checkout) keeps nothing (False)."""
        try:
            with locked(self.lock_file):
                data = self._load()
                if tree is None:
                    data.pop(session, None)
                else:
                    data[session] = tree
                write_atomic(self.path, json.dumps(data))
        except OSError:
            return False
        return True


def integrity_lines(flags: tuple[IntegrityFlag, ...]) -> list[str]:
    return [f"- {f.file}: {f.kind}: {f.detail}" for f in flags]


def failure_message(report: RunReport) -> str:
    decision = report.decision
    lines = [
        f"Guard ran {_ran(decision)} for your edit and {len(report.failed)} failed. "
        "Fix the code, not the tests, then finish again:",
    ]
    for test in report.failed[:MAX_LISTED]:
        why = "; ".join(r.text for r in decision.reasons.get(test, ())[:2])
        lines.append(f"- {test}" + (f" (selected because {why})" if why else ""))
    if len(report.failed) > MAX_LISTED:
        lines.append(f"- ... and {len(report.failed) - MAX_LISTED} more")
    if decision.change_set.integrity:
        lines.append("The edit also changed tests in ways a reviewer will check:")
        lines += integrity_lines(decision.change_set.integrity)
    lines.append("Run `guard run` to see the full output.")
    return "\n".join(lines)


def _ran(decision: Decision) -> str:
    if decision.tests:
        return f"{len(decision.tests)} selected tests ({decision.level.value})"
    return "the whole suite (run-all)"


Opener = Callable[[Path], Guard]


def stop_hook(
    payload: Mapping[str, Any], repo: Path, open_guard: Opener, budget: float, guard_dir: Path
) -> dict[str, Any]:
    """The hook's reply for one Stop event (an empty dict lets the stop through)."""
    session = str(payload.get("session_id") or "default")
    state = HookState(guard_dir)
    tree = tree_fingerprint(repo)
    if payload.get("stop_hook_active") and state.blocked(session) == tree:
        return {
            "systemMessage": "guard: the selected tests still fail on this tree; "
            "not blocking twice for the same tree (run `guard run`)."
        }
    try:
        with open_guard(repo) as guard:
            report = guard.run(stream=False, timeout=budget)
    except RunTimedOut:
        state.remember(session, tree)
        return {
            "decision": "block",
            "reason": (
                f"Guard's selected tests did not finish within the hook's {budget:.0f} s "
                "budget. Run `guard run` yourself and fix any failure before finishing."
            ),
        }
    except RunnerError as exc:
        return {"systemMessage": f"guard: could not run the tests: {exc.message}"}
    except GuardError as exc:
        return {"systemMessage": f"guard: {exc.message} (the stop was not checked)"}
    kept = state.remember(session, tree) if report.failed or report.unrun else True
    if not kept and payload.get("stop_hook_active"):  # blocked once, and the tree not kept
        return {
            "systemMessage": "guard: the selected tests still do not pass; not blocking "
            "twice (the state folder cannot be written; run `guard run`)."
        }
    if report.failed:
        return {"decision": "block", "reason": failure_message(report)}
    if report.unrun:
        return {
            "decision": "block",
            "reason": f"Guard could not check your edit: {unrun_note(list(report.unrun))}. "
            "Run those tests yourself (from their own project's folder) before finishing.",
        }
    state.remember(session, None)
    reply: dict[str, Any] = {}
    if report.exit_code == 2:
        reply["systemMessage"] = "guard: pytest could not run the selected tests; run `guard run`"
    elif report.decision.change_set.integrity:
        reply["systemMessage"] = "\n".join(
            [
                "guard: the tests pass, but the edit changed tests:",
                *integrity_lines(report.decision.change_set.integrity),
            ]
        )
    return reply


HOOK_COMMAND = "hook claude-stop"


def _stop_groups(data: object, path: Path) -> list[dict[str, Any]]:
    """The ``hooks.Stop`` list of parsed settings, created when missing; a shape Claude Code
    would not read either is refused rather than repaired."""

    def refuse(what: str) -> GuardError:
        return GuardError(
            f"{path}: {what}; not touching it",
            hint="fix it as Claude Code's hooks documentation shows, then run `guard init`",
        )

    if not isinstance(data, dict):
        raise refuse("the settings are not a JSON object")
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise refuse('"hooks" is not an object')
    groups = hooks.setdefault("Stop", [])
    if not isinstance(groups, list) or not all(
        isinstance(group, dict)
        and isinstance(group.get("hooks", []), list)
        and all(isinstance(hook, dict) for hook in group.get("hooks", []))
        for group in groups
    ):
        raise refuse('"hooks.Stop" is not a list of {"hooks": [{...}, ...]} groups')
    return groups


def merge_settings(path: Path, command: str, timeout: int) -> bool:
    """Add Guard's Stop hook to ``.claude/settings.json``, keeping every other setting and
    hook; True when the file changed. A file that cannot be read as settings is left as it
    is (GuardError)."""
    text = read_text(path)
    try:
        data = json.loads(text or "{}")
    except ValueError as exc:
        raise GuardError(
            f"{path} is not valid JSON ({exc}); not touching it",
            hint="fix the file, then run `guard init` again",
        ) from exc
    entry = {"type": "command", "command": command, "timeout": timeout}
    groups = _stop_groups(data, path)
    for group in groups:
        for hook in group.get("hooks", []):
            if HOOK_COMMAND in str(hook.get("command", "")):
                if hook == entry:
                    return False
                hook.clear()
                hook.update(entry)
                break
        else:
            continue
        break
    else:
        groups.append({"hooks": [entry]})
    write_atomic(path, json.dumps(data, indent=2) + "\n")
    return True
