"""A Ctrl-C is a one-line message however Python wrapped it, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from guard_adapters.cli.group import handle_errors


def _wrapped_interrupt() -> None:
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as exc:  # what __set_name__ does to a Ctrl-C during an import
        raise RuntimeError("Error calling __set_name__ on 'Field' instance") from exc


def test_a_wrapped_ctrl_c_is_an_interruption(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        handle_errors(_wrapped_interrupt)()
    assert exit_info.value.code == 130
    assert capsys.readouterr().err.strip() == "guard: interrupted"


def test_any_other_error_is_not_mistaken_for_one() -> None:
    def broken() -> None:
        raise RuntimeError("a bug")

    with pytest.raises(RuntimeError, match="a bug"):
        handle_errors(broken)()


def test_a_ctrl_c_while_the_entry_point_imports_the_commands_is_an_interruption(
    tmp_path: Path,
) -> None:
    """As a Ctrl-C right after ``guard`` starts: it lands in the imports, before any
    command's own handler is in place."""
    script = (
        "import sys\n"
        "class Interrupting:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'guard_adapters.cli.main':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Interrupting())\n"
        "sys.argv = ['guard', 'status']\n"
        "from guard_adapters.cli.fast import main\n"
        "main()\n"
    )
    env = {**os.environ, "GUARD_WORKER": "0"}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 130
    assert done.stderr.strip() == "guard: interrupted"
