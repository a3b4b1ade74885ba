"""`guard run` with evidence that names tests which no longer collect (deleted or renamed since
the ingest, or ghosts from old data): the tests that still exist run, never fewer."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from guard_adapters.coverage.ingest import ingest_coverage
from guard_adapters.pytest.environment import fingerprint
from guard_core.api import Guard
from guard_core.model import CoverEdge, Level
from tests.conftest import git, make_repo
from tests.integration.sample_project import FILES

A = "tests/test_a.py::"
EVERY_TEST = {
    A + "test_add", A + "test_const", A + "test_template", A + "test_param[1]",
    A + "test_param[2]", A + "test_flaky", "tests/test_b.py::TestCalc::test_double",
    "tests/test_b.py::TestCalc::test_ready",
}  # fmt: skip


@pytest.fixture(params=[False, True], ids=["unmeasured", "refreshing"])
def guard(tmp_path: Path, falkordb_url: str, request: pytest.FixtureRequest) -> Iterator[Guard]:
    os.environ["FLAKY_COUNTER"] = str(tmp_path / "counter")
    files = {**FILES,
             "tests/test_a.py": FILES["tests/test_a.py"].replace("n % 2 == 0", "True")}  # fmt: skip
    repo = make_repo(tmp_path / "sample", files)
    env = {"GUARD_FALKORDB_URL": falkordb_url, "GUARD_GRAPH": f"test:{uuid.uuid4().hex[:12]}"}
    with Guard.open(repo, env=env, refresh_evidence=request.param) as g:
        g.store.ensure_schema()
        ingest_coverage(repo, g.store, environment=fingerprint(None))
        try:
            yield g
        finally:
            g.store.clear()


def ghost(g: Guard, function: str, test: str) -> None:
    """Evidence naming ``test`` as it was before: written the way old data holds it."""
    sha = git(g.settings.repo, "rev-parse", "HEAD").strip()
    g.store.write_coverage([CoverEdge(function, test, confidence=1.0, evidence_count=1)],
                           sha=sha, tests=[test], replace=False)  # fmt: skip


def edit_mul(g: Guard) -> None:
    core = g.settings.repo / "pkg/core.py"
    core.write_text(core.read_text().replace("return a * b", "return b * a"))


def ran(report: object) -> set[str]:
    assert report.result is not None  # type: ignore[attr-defined]
    return {o.test for o in report.result.record.outcomes}  # type: ignore[attr-defined]


def test_a_selected_test_whose_file_is_gone_is_dropped_with_a_reason(guard: Guard) -> None:
    ghost(guard, "pkg/core.py::mul", "tests/test_nope.py::test_ghost")
    edit_mul(guard)
    report = guard.run(stream=False)
    assert "tests/test_nope.py::test_ghost" in report.decision.tests
    assert report.exit_code == 0, report.result
    wanted = {t for t in report.decision.tests if not t.startswith("tests/test_nope.py")}
    assert wanted and {t.partition("[")[0] for t in ran(report)} >= wanted
    assert any("tests/test_nope.py::test_ghost" in n and "no longer exists" in n
               for n in report.notes)  # fmt: skip


def test_a_selected_test_its_file_no_longer_defines_widens_to_the_suite(guard: Guard) -> None:
    ghost(guard, "pkg/core.py::mul", A + "test_renamed_since")
    edit_mul(guard)
    report = guard.run(stream=False)
    assert A + "test_renamed_since" in report.decision.tests
    assert report.exit_code == 0, report.result
    assert ran(report) == EVERY_TEST
    assert any("whole suite" in n for n in report.notes)


def test_when_no_selected_test_exists_any_more_the_whole_suite_runs(guard: Guard) -> None:
    ghost(guard, "pkg/core.py::unused", "tests/test_gone.py::test_old")
    core = guard.settings.repo / "pkg/core.py"
    core.write_text(core.read_text().replace("return -a", "return 0 - a"))
    report = guard.run(stream=False)
    assert report.decision.level is not Level.RUN_ALL
    assert report.decision.tests == ("tests/test_gone.py::test_old",)
    assert report.exit_code == 0 and ran(report) == EVERY_TEST
    assert any("whole suite" in n for n in report.notes)
