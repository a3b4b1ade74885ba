"""The collector's context switch under coverage.py's tracer (Python 3.10 and 3.11, or
``GUARD_COLLECTOR=coverage``): the lines each context ran reach that context, also the lines
of a frame that runs across a switch, with coverage.py itself tracing."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import coverage
import pytest

from guard_adapters.pytest.tracers import CoverageLines

SOURCE = """\
def first():
    a = 1
    return a


def second():
    b = 2
    return b


def across(switch):
    before = 1
    switch("ctx_2")
    after = 2
    return before + after
"""


def load(root: Path) -> ModuleType:
    path = root / "pkg_switch.py"
    path.write_text(SOURCE, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("pkg_switch", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(sys.gettrace() is not None, reason="another tracer is running")
def test_each_context_gets_the_lines_it_ran_across_switches(tmp_path: Path) -> None:
    module = load(tmp_path)
    cov = coverage.Coverage(data_file=None, source=[str(tmp_path)], config_file=False)
    lines = CoverageLines(tmp_path)
    cov.start()
    try:
        cov._collector.use_data(lines, None)
        lines.switch(cov, "ctx_1")
        module.first()
        module.across(lambda label: lines.switch(cov, label))
        module.second()
        lines.switch(cov, "ctx_3")  # nothing ran under ctx_3 before the end
    finally:
        cov.stop()
    cov._collector.flush_data()  # what ran since the last switch: as the collector does
    seen = lines.dump()
    assert seen["ctx_1"]["pkg_switch.py"] == [2, 3, 12, 13]
    assert seen["ctx_2"]["pkg_switch.py"] == [7, 8, 14, 15]
    assert "ctx_3" not in seen
