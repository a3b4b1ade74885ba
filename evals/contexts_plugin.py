"""pytest plugin (``-p contexts_plugin``): per-test line coverage, the evidence of the plain
coverage selector (``evals/coverage_select.py``), as ``pytest-cov --cov-context=test`` records it.

Runs inside the target's virtualenv. coverage.py starts when pytest loads this plugin, before
conftests and test modules import the target, so lines run at import or collection time carry the
empty context; every test's set-up, call and teardown run under its node id. Each pytest process
(xdist workers included) writes ``$EVALS_CONTEXTS/<pid>.json``: ``{path: {line: [contexts]}}``.
Deliberately independent of Guard's own collector.
"""

from __future__ import annotations

import json
import os
from typing import Any

import coverage
import pytest

_cov = coverage.Coverage(data_file=None, source=[os.getcwd()], config_file=False)
_cov.start()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: Any, nextitem: Any) -> Any:
    _cov.switch_context(item.nodeid)
    yield


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    _cov.stop()
    data = _cov.get_data()
    out = {
        path: {str(line): sorted(ctx) for line, ctx in data.contexts_by_lineno(path).items()}
        for path in data.measured_files()
    }
    folder = os.environ["EVALS_CONTEXTS"]
    with open(os.path.join(folder, f"{os.getpid()}.json"), "w", encoding="utf-8") as fh:
        json.dump(out, fh)
