"""A whole-suite run that does not finish (an edit that makes the suite hang) is stopped."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from evals.pytest_run import SuiteTimeout, run_pytest


def test_a_suite_past_its_time_is_killed_and_says_so(tmp_path: Path) -> None:
    hang = "import time\n\n\ndef test_hang():\n    time.sleep(60)\n"
    (tmp_path / "test_hang.py").write_text(hang)
    with pytest.raises(SuiteTimeout, match="did not finish in 2 s"):
        run_pytest(Path(sys.executable), tmp_path, None, timeout=2)
