"""A Ctrl-C is a one-line message however Python wrapped it, never a traceback."""

from __future__ import annotations

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
