"""``guard run`` refreshes the evidence: real git, real pytest under the collector, real
FalkorDB. After a passing run the next decision diffs against the tree that passed, and the
other tests' line evidence still points at the right lines."""

from __future__ import annotations

import contextlib
import os
import site
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from guard_adapters.coverage.ingest import ingest_coverage
from guard_adapters.coverage.refresh import CoverageRefresher
from guard_adapters.git.diff import diff_entries
from guard_adapters.git.repo import head_sha
from guard_core import engine
from guard_core.api import Guard
from guard_core.model import Level, RunRecord, TestOutcome
from guard_core.ports import RunResult
from tests.conftest import git, make_repo

MOD = (
    "def scale(x):\n"
    "    y = x * 2\n"
    "    return y\n\n\n"
    "def label(n):\n"
    "    if n > 0:\n"
    "        out = 'pos'\n"
    "    else:\n"
    "        out = 'neg'\n"
    "    return out\n"
)
FILES = {
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'
    'filterwarnings = ["error"]\n',
    "pkg/__init__.py": "",
    "pkg/mod.py": MOD,
    "tests/test_scale.py": "from pkg.mod import scale\n\n\ndef test_scale():\n"
    "    assert scale(2) == 4\n",
    "tests/test_label.py": "from pkg.mod import label\n\n\ndef test_pos():\n"
    "    assert label(1) == 'pos'\n\n\ndef test_neg():\n    assert label(-1) == 'neg'\n",
}
POS, NEG = "tests/test_label.py::test_pos", "tests/test_label.py::test_neg"
SCALE = "tests/test_scale.py::test_scale"


@contextlib.contextmanager
def ingested(repo: Path, falkordb_url: str) -> Iterator[Guard]:
    env = {"GUARD_FALKORDB_URL": falkordb_url, "GUARD_GRAPH": f"test:refresh-{os.getpid()}"}
    with Guard.open(repo, env=env, python=sys.executable, refresh_evidence=True) as g:
        g.store.clear()
        g.store.ensure_schema()
        ingest_coverage(repo, g.store, python=sys.executable)
        try:
            yield g
        finally:
            g.store.clear()


@pytest.fixture
def guard(tmp_path: Path, falkordb_url: str) -> Iterator[Guard]:
    with ingested(make_repo(tmp_path / "sample", FILES), falkordb_url) as g:
        yield g


def replace(g: Guard, path: str, old: str, new: str) -> None:
    file = g.settings.repo / path
    text = file.read_text()
    assert old in text
    file.write_text(text.replace(old, new))


def test_a_passing_run_moves_the_base_and_keeps_line_evidence_exact(guard: Guard) -> None:
    repo = guard.settings.repo
    first_base = guard.store.ingest_info().coverage_sha
    # a harmless edit that pushes label() two lines down, plus a new untracked module
    replace(guard, "pkg/mod.py", "    y = x * 2\n", "    y = x + x\n    y = y + 0\n    y = y - 0\n")
    (repo / "pkg" / "extra.py").write_text("def helper():\n    return 1\n")
    report = guard.run(stream=False)
    assert set(report.decision.tests) == {SCALE}
    assert report.exit_code == 0
    assert report.refreshed.startswith("evidence refreshed at"), report.refreshed
    info = guard.store.ingest_info()
    assert info.coverage_complete and info.coverage_sha not in (first_base, head_sha(repo))

    # nothing changed since the tree that passed: nothing to run (the untracked module too)
    again = guard.check()
    assert again.change_set.is_empty and again.tests == ()

    # label's recorded lines were moved with the edit: a change in the else branch selects
    # only the test that takes it (stale lines would select both, or neither)
    replace(guard, "pkg/mod.py", "out = 'neg'", "out = 'NEG'")
    broken = guard.run(stream=False)
    assert broken.decision.level is not Level.RUN_ALL
    assert set(broken.decision.tests) == {NEG}
    # test_neg's edge was measured at the ingest commit and carried over: still fresh
    assert broken.decision.components.freshness == 1.0
    assert guard.store.ingest_info().lineage == (first_base,)
    assert broken.exit_code == 1 and broken.failed == [NEG]
    assert broken.refreshed == "evidence not refreshed: not every test passed"
    assert guard.store.ingest_info().coverage_sha == info.coverage_sha

    replace(guard, "pkg/mod.py", "out = 'NEG'", "out = 'neg'")
    assert guard.check().tests == ()
    replace(guard, "pkg/mod.py", "out = 'pos'", "out = 'POS'")
    assert set(guard.check().tests) == {POS}
    replace(guard, "pkg/mod.py", "out = 'POS'", "out = 'pos'")

    # committing the tree that passed changes nothing either
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "agent's work")
    assert guard.check().tests == ()


def test_untracked_file_in_the_snapshot_shows_up_when_it_changes(guard: Guard) -> None:
    repo = guard.settings.repo
    (repo / "pkg" / "extra.py").write_text("def helper():\n    return 1\n")
    assert guard.run(stream=False).exit_code == 0  # selects nothing: new, unreached code
    base = guard.store.ingest_info().coverage_sha
    assert base == head_sha(repo)  # nothing ran, nothing refreshed
    replace(guard, "pkg/mod.py", "y = x * 2", "y = 2 * x")
    assert guard.run(stream=False).refreshed.startswith("evidence refreshed")
    snapshot = guard.store.ingest_info().coverage_sha
    assert snapshot is not None
    assert diff_entries(repo, snapshot) == []
    (repo / "pkg" / "extra.py").write_text("def helper():\n    return 2\n")
    entries = diff_entries(repo, snapshot)
    assert [(e.status, e.path) for e in entries] == [("M", "pkg/extra.py")]
    (repo / "pkg" / "extra.py").unlink()
    assert [(e.status, e.path) for e in diff_entries(repo, snapshot)] == [("D", "pkg/extra.py")]


def test_a_tree_edited_during_the_run_is_not_refreshed(guard: Guard) -> None:
    replace(guard, "pkg/mod.py", "y = x * 2", "y = 2 * x")
    refresher = CoverageRefresher(guard.settings)
    observed = refresher.observe()
    assert observed is not None
    session = refresher.start(guard.store, guard.check(), observed)
    assert session is not None
    replace(guard, "pkg/mod.py", "return y", "return y  # edited while the tests ran")
    passed = RunResult(0, RunRecord("r", 0.0, "x", 1.0, (TestOutcome(SCALE, "passed", 1.0),)))
    message = refresher.finish(guard.store, session, passed)
    assert message == "evidence not refreshed: the working tree changed while the tests ran"
    assert guard.store.ingest_info().coverage_sha == head_sha(guard.settings.repo)


def test_shared_servers_do_not_refresh_unless_asked(tmp_path: Path, falkordb_url: str) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    with Guard.open(repo, env={"GUARD_FALKORDB_URL": falkordb_url}) as g:
        assert not g.settings.refreshes_evidence
    with Guard.open(repo, env={}) as g:
        assert g.settings.refreshes_evidence  # the embedded server is this clone's own


def test_cli_run_reports_the_refresh(guard: Guard, falkordb_url: str) -> None:
    repo = guard.settings.repo
    replace(guard, "pkg/mod.py", "y = x * 2", "y = 2 * x")
    env = {**os.environ, "GUARD_FALKORDB_URL": falkordb_url, "GUARD_GRAPH": guard.settings.graph
           or "", "GUARD_PYTHON": sys.executable}  # fmt: skip
    cli = [sys.executable, "-m", "guard_adapters.cli", "run", "--repo", str(repo)]
    plain = subprocess.run(cli, capture_output=True, text=True, env=env, check=False)
    assert plain.returncode == 0, plain.stderr
    assert "evidence refreshed" not in plain.stdout  # a shared server: off by default
    done = subprocess.run([*cli, "--refresh"], capture_output=True, text=True, env=env,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "guard: evidence refreshed at" in done.stdout
    assert guard.check().tests == ()


def test_code_added_and_never_run_is_not_proven_unexercised(guard: Guard) -> None:
    replace(guard, "pkg/mod.py", "y = x * 2", "y = 2 * x")
    with open(guard.settings.repo / "pkg" / "mod.py", "a") as handle:
        handle.write("\n\ndef fresh():\n    return 1\n")
    assert guard.run(stream=False).refreshed.startswith("evidence refreshed")
    replace(guard, "pkg/mod.py", "    return 1\n", "    return 2\n")
    decision = guard.check()
    # no test ran it, but nothing proves none can: judged as missing evidence, not as absence
    assert decision.level is Level.RUN_ALL
    assert any(o.kind == "no_evidence" for o in decision.overrides)


def test_a_failure_the_base_already_had_does_not_block_the_refresh(
    tmp_path: Path, falkordb_url: str
) -> None:
    broken = (
        "import pytest\nfrom pkg.mod import scale\n\n\n"
        "@pytest.mark.parametrize('k', [1, 3])\ndef test_broken(k):\n"
        "    if scale(k) == 2:\n        raise ValueError('scaled to two')\n"
    )
    repo = make_repo(tmp_path / "known", {**FILES, "tests/test_broken.py": broken})
    with ingested(repo, falkordb_url) as guard:
        known = guard.store.ingest_info().known_failures
        assert set(known) == {"tests/test_broken.py::test_broken[1]"}
        replace(guard, "pkg/mod.py", "y = x * 2", "y = 2 * x")
        report = guard.run(stream=False)
        assert report.exit_code == 1 and report.failed == ["tests/test_broken.py::test_broken[1]"]
        assert report.refreshed.startswith("evidence refreshed"), report.refreshed
        # the other parameter failing, even with the same message, is the edit's doing
        replace(guard, "pkg/mod.py", "y = 2 * x", "y = 2 * x if x != 3 else 2")
        other = guard.run(stream=False)
        assert sorted(other.failed) == ["tests/test_broken.py::test_broken[1]",
                                        "tests/test_broken.py::test_broken[3]"]  # fmt: skip
        assert other.refreshed == "evidence not refreshed: not every test passed"


def test_the_first_run_uses_the_interpreter_the_evidence_came_from(
    tmp_path: Path, falkordb_url: str
) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str((venv / "bin" / "python").absolute())
    ask = "import sysconfig; print(sysconfig.get_path('purelib'))"
    purelib = subprocess.run([python, "-c", ask], capture_output=True, text=True,
                             check=True).stdout.strip()  # fmt: skip
    # this interpreter sees the test environment's packages (pytest, coverage) too
    Path(purelib, "host.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    marker = tmp_path / "ran-with"
    conftest = f"import sys\nopen({str(marker)!r}, 'w').write(sys.executable)\n"
    repo = make_repo(tmp_path / "interp", {**FILES, "tests/conftest.py": conftest})
    env = {"GUARD_FALKORDB_URL": falkordb_url, "GUARD_GRAPH": f"test:interp-{os.getpid()}",
           "GUARD_EVIDENCE_BASES": "1"}  # one graph: the refresh below writes it  # fmt: skip
    with Guard.open(repo, env=env) as g:
        g.store.clear()
        g.store.ensure_schema()
        ingest_coverage(repo, g.store, python=python)
    try:
        with Guard.open(repo, env=env, refresh_evidence=True) as g:  # no interpreter given
            replace(g, "pkg/mod.py", "y = x * 2", "y = 2 * x")
            report = g.run(stream=False)
            assert report.exit_code == 0
            assert marker.read_text() == python
            assert report.refreshed.startswith("evidence refreshed")
    finally:
        with Guard.open(repo, env=env) as g:
            g.store.clear()


def test_a_long_lineage_is_folded_into_the_edges(
    guard: Guard, monkeypatch: pytest.MonkeyPatch
) -> None:
    import guard_adapters.coverage.refresh as refresh

    monkeypatch.setattr(refresh, "_MAX_LINEAGE", 1)
    replace(guard, "pkg/mod.py", "y = x * 2", "y = 2 * x")
    assert guard.run(stream=False).refreshed.startswith("evidence refreshed")
    assert len(guard.store.ingest_info().lineage) == 1
    replace(guard, "pkg/mod.py", "y = 2 * x", "y = x * 2")
    assert guard.run(stream=False).refreshed.startswith("evidence refreshed")
    assert guard.store.ingest_info().lineage == ()  # folded: every edge carries the new base
    replace(guard, "pkg/mod.py", "out = 'neg'", "out = 'NEG'")
    decision = guard.check()
    assert set(decision.tests) == {NEG} and decision.components.freshness == 1.0


def test_a_refresher_that_breaks_never_stops_the_run(
    guard: Guard, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(CoverageRefresher, "start", broken)
    replace(guard, "pkg/mod.py", "out = 'neg'", "out = 'NEG'")
    report = guard.run(stream=False)
    assert report.failed == [NEG] and report.exit_code == 1 and report.refreshed == ""


def test_a_run_that_left_out_tests_whose_imports_ran_the_change_does_not_refresh(
    tmp_path: Path, falkordb_url: str
) -> None:
    """The import probe let the readers of what ``build()`` built stand for every importer;
    the importers that did not run would keep the old code's import-time evidence."""
    files = {
        "pkg/__init__.py": "",
        "pkg/conf.py": (
            "def build():\n    return {'a': 1}\n\n\nTABLE = build()\n\n\n"
            "def lookup(k):\n    return TABLE[k]\n\n\ndef other():\n    return 0\n"
        ),
        "tests/test_conf.py": (
            "from pkg.conf import lookup, other\n\n\n"
            "def test_lookup():\n    assert lookup('a') >= 1\n\n\n"
            "def test_other():\n    assert other() == 0\n"
        ),
    }
    with ingested(make_repo(tmp_path / "imports", files), falkordb_url) as g:
        base = g.store.ingest_info().coverage_sha
        replace(g, "pkg/conf.py", "{'a': 1}", "{'a': 2}")
        report = g.run(stream=False)
        assert report.decision.tests == ("tests/test_conf.py::test_lookup",)
        assert report.exit_code == 0
        assert not report.refreshed.startswith("evidence refreshed"), report.refreshed
        assert g.store.ingest_info().coverage_sha == base


EVIDENCE_ONLY = {
    "pytest.ini": "[pytest]\naddopts = --doctest-modules\n",
    "pkg/__init__.py": "",
    "pkg/m.py": 'def f(x):\n    """\n    >>> f(1)\n    2\n    """\n    return x + 1\n\n\n'
    "def g(x):\n    return x * 2\n",
    "tests/test_g.py": "from pkg.m import g\n\n\ndef test_g():\n    assert g(2) == 4\n",
    "tests/test_made.py": "from pkg.m import f\n\n\ndef make():\n    def t():\n"
    "        assert f(1) == 2\n    return t\n\n\ntest_made = make()\n\n\n"
    "def test_plain():\n    assert True\n",
}


def test_tests_only_the_evidence_knows_keep_it_through_a_refresh_of_their_files(
    tmp_path: Path, falkordb_url: str
) -> None:
    """A doctest of a source module and a test a module builds at import have no node in the
    static index; a refresh that re-indexes their files without running them must leave their
    evidence, so that a later edit of the code they run selects them."""
    with ingested(make_repo(tmp_path / "only", EVIDENCE_ONLY), falkordb_url) as g:
        replace(g, "pkg/m.py", "return x * 2", "return x * 2 + 0")
        replace(g, "tests/test_made.py", "assert True", "assert True is True")
        run = g.run(stream=False)
        assert run.exit_code == 0
        assert "pkg/m.py::pkg.m.f" not in run.decision.tests
        assert run.refreshed.startswith("evidence refreshed")
        replace(g, "pkg/m.py", "return x + 1", "return x + 2")  # breaks both
        assert {"pkg/m.py::pkg.m.f", "tests/test_made.py::test_made"} <= set(g.check().tests)


UNLISTED = {
    "pkg/__init__.py": "",
    "pkg/m.py": "def f(x):\n    return x + 1\n\n\ndef g(x):\n    return x * 2\n",
    "tests/__init__.py": "",
    "tests/base.py": "from pkg.m import f\n\n\nclass Base:\n    pass\n\n\n"
    "def make_base():\n    return Base\n",
    "tests/mixins.py": "from tests.base import Base\n\n\nclass Mixin(Base):\n    pass\n",
    "tests/helpers.py": "from tests.base import make_base  # noqa: F401\n",
    # a base class a call returns: no static fact says that TestK derives from Base
    "tests/test_k.py": "from pkg.m import f, g\nfrom tests.helpers import make_base\n\n\n"
    "class TestK(make_base()):\n    def test_f(self):\n        assert f(1) == 2\n\n"
    "    def test_g(self):\n        assert g(2) == 4\n",
    "tests/test_h.py": "from pkg.m import f\n\n\ndef make():\n    def t():\n"
    "        assert f(2) == 3\n    return t\n\n\n"
    "def test_h():\n    assert f(2) == 3\n\n\ndef test_other():\n    assert True\n",
}


def test_a_test_the_index_no_longer_lists_but_pytest_collects_keeps_its_evidence(
    tmp_path: Path, falkordb_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test method moved into a base class of another module (one a call returns), and a
    test function turned into one a call builds: pytest collects both under the same ids,
    the index of their files no longer lists them. A refresh that did not run one (no static
    fact says TestK derives from Base) must keep its evidence. The decision here runs
    without the rule that runs the moved method (its evidence finds TestK), as a decision
    that misses it would."""
    rules = tuple(r for r in engine.builtin_rules() if r.name != "inherited-test")
    monkeypatch.setattr(engine, "builtin_rules", lambda: rules)
    with ingested(make_repo(tmp_path / "unlisted", UNLISTED), falkordb_url) as g:
        replace(g, "tests/test_k.py", "    def test_f(self):\n        assert f(1) == 2\n\n", "")
        replace(g, "tests/base.py", "    pass\n",
                "    def test_f(self):\n        assert f(1) == 2\n")  # fmt: skip
        replace(g, "tests/test_h.py", "def test_h():\n    assert f(2) == 3\n",
                "test_h = make()\n")  # fmt: skip
        run = g.run(stream=False)
        assert run.exit_code == 0
        assert run.refreshed.startswith("evidence refreshed"), run.refreshed
        assert run.result is not None  # the moved method did not run: the refresh kept it
        assert "tests/test_k.py::TestK::test_f" not in {o.test for o in run.result.record.outcomes}
        replace(g, "pkg/m.py", "return x + 1", "return x + 2")  # breaks both
        assert {"tests/test_k.py::TestK::test_f", "tests/test_h.py::test_h"} <= set(g.check().tests)


def test_a_broken_test_no_index_lists_is_run_and_fails(tmp_path: Path, falkordb_url: str) -> None:
    """The same two moves, each breaking the moved test (into the base class of a mixin the
    test class derives from): the check must run it."""
    inherited = {
        **UNLISTED,
        "tests/test_k.py": UNLISTED["tests/test_k.py"]
        .replace("from tests.helpers import make_base", "from tests.mixins import Mixin")
        .replace("(make_base())", "(Mixin)"),
    }
    with ingested(make_repo(tmp_path / "unlisted", inherited), falkordb_url) as g:
        replace(g, "tests/test_k.py", "    def test_f(self):\n        assert f(1) == 2\n\n", "")
        replace(g, "tests/base.py", "    pass\n",
                "    def test_f(self):\n        assert f(1) == 3\n")  # fmt: skip
        assert g.run(stream=False).exit_code != 0
        git(g.settings.repo, "checkout", "-q", "--", ".")
        replace(g, "tests/test_h.py", "def test_h():\n    assert f(2) == 3\n",
                "test_h = make()\n")  # fmt: skip
        replace(g, "tests/test_h.py", "        assert f(2) == 3\n", "        assert f(2) == 4\n")
        assert g.run(stream=False).exit_code != 0
