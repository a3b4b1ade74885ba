"""Files Guard rewrites for the user (``.claude/settings.json``, ``AGENTS.md``, the Cursor rule,
``.gitignore``) and the Stop hook's state: whole-file replacement, nothing lost, nothing of the
user's clobbered."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest

from guard_adapters.agents.claude import HookState, merge_settings
from guard_adapters.agents.instructions import write_agents_md, write_cursor_rule
from guard_adapters.agents.setup import ignore_guard_dir
from guard_core.errors import GuardError
from tests.conftest import make_repo

WRITERS, UPDATES = 6, 25


def _remember_many(guard_dir: str, writer: int) -> None:
    state = HookState(Path(guard_dir))
    for i in range(UPDATES):
        state.remember(f"w{writer}-{i}", f"tree-{writer}-{i}")


def test_concurrent_hook_state_updates_are_all_kept(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_remember_many, args=(str(tmp_path), w)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * WRITERS
    state = HookState(tmp_path)
    for w in range(WRITERS):
        for i in range(UPDATES):
            assert state.blocked(f"w{w}-{i}") == f"tree-{w}-{i}", f"w{w}-{i} was lost"


MALFORMED = {
    "truncated": b'{"hooks": {"Stop": [',
    "not-an-object": b"[1, 2]\n",
    "hooks-a-list": b'{"hooks": []}',
    "stop-an-object": b'{"hooks": {"Stop": {"x": 1}}}',
    "group-a-number": b'{"hooks": {"Stop": [1]}}',
    "group-hooks-a-string": b'{"hooks": {"Stop": [{"hooks": "guard"}]}}',
    "hook-a-string": b'{"hooks": {"Stop": [{"hooks": ["guard hook claude-stop"]}]}}',
    "not-utf8": b'{"model": "\xff\xfe"}',
}


@pytest.mark.parametrize("content", list(MALFORMED.values()), ids=list(MALFORMED))
def test_malformed_claude_settings_are_refused_and_left_byte_identical(
    tmp_path: Path, guard_env: str, content: bytes
) -> None:
    repo = make_repo(tmp_path / "r", {"m.py": "x = 1\n"})
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_bytes(content)
    out = subprocess.run(
        [sys.executable, "-m", "guard_adapters.cli", "init", "--repo", str(repo),
         "--agent", "claude"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    assert "settings.json" in out.stderr and "not touching it" in out.stderr, out.stderr
    assert settings.read_bytes() == content
    assert os.listdir(settings.parent) == ["settings.json"]


def test_rewrites_keep_mode_symlinks_and_line_endings(tmp_path: Path) -> None:
    agents = tmp_path / "AGENTS.md"
    agents.write_bytes(b"# House rules\r\n\r\nUse tabs.\r\n")
    agents.chmod(0o640)
    real_ignore = tmp_path / "dotfiles" / "ignore"
    real_ignore.parent.mkdir()
    real_ignore.write_bytes(b"*.pyc\r\n")
    (tmp_path / ".gitignore").symlink_to(real_ignore)
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"model": "opus"}')
    settings.chmod(0o600)

    assert write_agents_md(tmp_path) and write_cursor_rule(tmp_path)
    assert ignore_guard_dir(tmp_path)
    assert merge_settings(settings, "guard hook claude-stop", 600)

    assert agents.read_bytes().startswith(b"# House rules\r\n\r\nUse tabs.\r\n")
    assert agents.stat().st_mode & 0o777 == 0o640
    assert (tmp_path / ".gitignore").is_symlink()
    assert real_ignore.read_bytes() == b"*.pyc\r\n.guard/\n"
    assert settings.stat().st_mode & 0o777 == 0o600
    assert json.loads(settings.read_text())["model"] == "opus"
    leftovers = [p.name for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []


def test_an_unreadable_instruction_file_is_refused_and_kept(tmp_path: Path) -> None:
    agents = tmp_path / "AGENTS.md"
    agents.write_bytes(b"# R\xe8gles\n")
    with pytest.raises(GuardError, match="not UTF-8"):
        write_agents_md(tmp_path)
    assert agents.read_bytes() == b"# R\xe8gles\n"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    from guard_adapters.files import write_atomic

    target = tmp_path / "AGENTS.md"
    target.write_text("old\n")
    with pytest.raises(UnicodeEncodeError):
        write_atomic(target, "new \ud800\n")  # a lone surrogate cannot be encoded
    assert target.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["AGENTS.md"]
