"""The decision engine end to end: real git, real pytest and coverage, real FalkorDB."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

import guard_adapters
from guard_adapters.coverage.ingest import ingest_coverage
from guard_adapters.pytest.environment import fingerprint
from guard_core.api import Guard
from guard_core.model import Level
from guard_core.variant import Variant
from tests.conftest import make_repo
from tests.e2e.conftest import without_import_probe
from tests.integration.sample_project import FILES

SCHEMA = json.loads(
    (Path(guard_adapters.__file__).parent / "schemas" / "decision-1.schema.json").read_text()
)
A = "tests/test_a.py::"
B = "tests/test_b.py::TestCalc::"


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory, falkordb_url: str) -> tuple[Path, str]:
    """One sample project ingested once; each test edits the tree and restores it."""
    root = tmp_path_factory.mktemp("e2e")
    os.environ["FLAKY_COUNTER"] = str(root / "counter")
    repo = make_repo(
        root / "sample",
        {
            **FILES,
            "tests/test_a.py": FILES["tests/test_a.py"].replace("assert n % 2 == 0", "assert True"),
        },
    )
    graph = f"test:e2e-{os.getpid()}"
    with Guard.open(repo, env={"GUARD_FALKORDB_URL": falkordb_url, "GUARD_GRAPH": graph}) as g:
        g.store.clear()
        g.store.ensure_schema()
        ingest_coverage(repo, g.store, environment=fingerprint(None))
    yield repo, graph
    with Guard.open(repo, env={"GUARD_FALKORDB_URL": falkordb_url, "GUARD_GRAPH": graph}) as g:
        g.store.clear()


@pytest.fixture
def guard(ingested: tuple[Path, str], falkordb_url: str):  # type: ignore[no-untyped-def]
    repo, graph = ingested
    env = {"GUARD_FALKORDB_URL": falkordb_url, "GUARD_GRAPH": graph}
    g = Guard.open(repo, env=env)
    yield g
    g.close()
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "--", "."], check=True)
    subprocess.run(["git", "-C", str(repo), "clean", "-qfd"], check=True)


@contextlib.contextmanager
def fresh_ingest(repo: Path, falkordb_url: str, label: str) -> Iterator[Guard]:
    """A Guard on ``repo`` with its coverage ingested into a fresh graph, cleared afterwards."""
    env = {"GUARD_FALKORDB_URL": falkordb_url, "GUARD_GRAPH": f"test:{label}-{os.getpid()}"}
    with Guard.open(repo, env=env) as g:
        try:
            ingest_coverage(repo, g.store)
            yield g
        finally:
            g.store.clear()


def seeded(g: Guard) -> Guard:
    """``g``'s graph read under the seed's published policy (the harness's ablation)."""
    literal = Guard(g.settings, g.plugins)
    literal.variant = Variant(seed_policy=True)
    return literal


def edit(g: Guard, path: str, old: str, new: str) -> None:
    file = g.settings.repo / path
    text = file.read_text()
    assert old in text, old
    file.write_text(text.replace(old, new, 1))


def decide(g: Guard, **kw: object):  # type: ignore[no-untyped-def]
    decision = g.check()
    jsonschema.validate(decision.to_json(), SCHEMA)
    return decision


def test_helper_edit_selects_tests_in_other_files_and_run_fails(guard: Guard) -> None:
    edit(guard, "pkg/core.py", "return a * b", "return a * b + 1")
    d = decide(guard)
    assert d.level is Level.SUBSET
    assert set(d.tests) == {A + "test_param", B + "test_double"}
    assert [r.rule for r in d.reasons[B + "test_double"]] == ["covers"]
    report = guard.run(stream=False)
    assert report.exit_code == 1
    assert {t.split("[")[0] for t in report.failed} == {A + "test_param", B + "test_double"}


def test_comment_only_edit_runs_nothing(guard: Guard) -> None:
    edit(guard, "pkg/core.py", "def mul(a, b):", "def mul(a, b):  # why not")
    d = decide(guard)
    assert d.tests == () and d.level is Level.SUBSET
    assert guard.run(stream=False).exit_code == 0


def test_constant_selects_its_readers_only(guard: Guard) -> None:
    edit(guard, "pkg/core.py", "LIMIT = 10", "LIMIT = 4")
    d = decide(guard)
    assert set(d.tests) == {A + "test_add", A + "test_const"}
    assert all(r.rule == "reads-changed-name" for t in d.tests for r in d.reasons[t])
    assert guard.run(stream=False).exit_code == 1


def test_template_edit_selects_the_test_that_reads_it(guard: Guard) -> None:
    edit(guard, "pkg/templates/page.html", "hello", "bye")
    d = decide(guard)
    assert d.tests == (A + "test_template",)
    assert d.reasons[A + "test_template"][0].rule == "reads-data-file"


def test_unexercised_function_adds_nothing_but_seed_policy_falls_back(guard: Guard) -> None:
    edit(guard, "pkg/core.py", "return -a", "return a")
    assert decide(guard).tests == ()
    literal = seeded(guard)
    try:
        d = literal.check()
        assert d.level is Level.RUN_ALL
        assert [o.kind for o in d.overrides] == ["no_evidence"]
    finally:
        literal.close()


def test_environment_file_forces_run_all(guard: Guard) -> None:
    path = guard.settings.repo / "pyproject.toml"
    path.write_text(path.read_text() + "\n# x\n")
    d = decide(guard)
    assert d.level is Level.RUN_ALL and "environment" in [o.kind for o in d.overrides]
    assert len(d.tests) == d.total_tests >= 7


@pytest.mark.parametrize("path", ["tests/test_b.py", "tests/conftest.py"])
def test_test_files_are_run_all_under_the_seed_policy_only(guard: Guard, path: str) -> None:
    (guard.settings.repo / path).write_text((guard.settings.repo / path).read_text() + "\n# x\n")
    assert decide(guard).tests == ()
    literal = seeded(guard)
    try:
        d = literal.check()
        assert d.level is Level.RUN_ALL and "test_files" in [o.kind for o in d.overrides]
    finally:
        literal.close()


def test_an_assertion_edit_selects_that_test_and_no_other_file(guard: Guard) -> None:
    edit(guard, "tests/test_b.py", "assert calc.double(2) == 4", "assert calc.double(2) == 5")
    d = decide(guard)
    assert d.level is Level.SUBSET and d.tests == (B + "test_double",)
    report = guard.run(stream=False)
    assert report.exit_code == 1 and report.failed == [B + "test_double"]


def test_a_fixture_edit_selects_the_tests_that_request_it(guard: Guard) -> None:
    edit(guard, "tests/conftest.py", "return Calc().setup()", "return Calc()")
    d = decide(guard)
    assert set(d.tests) == {A + "test_add", B + "test_double", B + "test_ready"}
    assert guard.run(stream=False).exit_code == 1


def test_a_class_fixture_edit_selects_its_class(guard: Guard) -> None:
    edit(guard, "tests/test_b.py", "return calc.ready", "return not calc.ready")
    d = decide(guard)
    assert set(d.tests) == {B + "test_double", B + "test_ready"}


def test_a_new_test_and_a_new_test_file_are_selected(guard: Guard) -> None:
    file = guard.settings.repo / "tests/test_a.py"
    file.write_text(file.read_text() + "\n\ndef test_new():\n    assert core.mul(2, 2) == 5\n")
    (guard.settings.repo / "tests/test_c.py").write_text("def test_c():\n    assert False\n")
    d = decide(guard)
    assert set(d.tests) == {A + "test_new", "tests/test_c.py"}, {t: d.reasons[t] for t in d.tests}
    report = guard.run(stream=False)
    assert report.exit_code == 1
    assert set(report.failed) == {A + "test_new", "tests/test_c.py::test_c"}


def test_conftest_top_level_code_selects_every_test_under_its_folder(guard: Guard) -> None:
    file = guard.settings.repo / "tests/conftest.py"
    file.write_text(file.read_text() + "\n\ncollect_ignore = ['test_b.py']\n")
    d = decide(guard)
    assert d.level is not Level.RUN_ALL
    # as files: its hooks may make tests no index lists
    assert {A.removesuffix("::"), B.split("::")[0]} <= set(d.tests), d.tests


def test_a_deleted_test_is_flagged_and_not_run(guard: Guard) -> None:
    edit(guard, "tests/test_b.py", "    def test_ready(self, ready):\n        assert ready\n", "")
    d = decide(guard)
    assert B + "test_ready" not in d.tests and d.level is not Level.RUN_ALL
    assert [f.kind for f in d.change_set.integrity] == ["tests-removed"]


def test_dynamic_dispatch_with_complete_evidence_selects_its_covering_tests(
    guard: Guard,
) -> None:
    edit(
        guard,
        "pkg/core.py",
        "return min(a + b, LIMIT)",
        "return min(getattr(a, '__add__')(b), globals()['LIMIT'])",
    )
    d = decide(guard)
    assert "dynamic_widening" not in [o.kind for o in d.overrides]
    assert d.tests == (A + "test_add",)


def test_dynamic_dispatch_widens_to_the_module_tests_under_the_seed_policy(guard: Guard) -> None:
    edit(
        guard,
        "pkg/core.py",
        "return min(a + b, LIMIT)",
        "return min(getattr(a, '__add__')(b), globals()['LIMIT'])",
    )
    literal = seeded(guard)
    try:
        d = literal.check()
    finally:
        literal.close()
    assert "dynamic_widening" in [o.kind for o in d.overrides]


def test_unparsable_change_is_run_all(guard: Guard) -> None:
    edit(guard, "pkg/core.py", "def mul(a, b):", "def mul(a, b:")
    d = decide(guard)
    assert d.level is Level.RUN_ALL
    assert [o.kind for o in d.overrides] == ["unreadable_change"]


def test_feedback_repairs_a_missing_edge_for_the_function(guard: Guard) -> None:
    edit(guard, "pkg/core.py", "return -a", "return a - 1")
    assert decide(guard).tests == ()
    head = subprocess.run(
        ["git", "-C", str(guard.settings.repo), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    guard.feedback("pkg/core.py::unused", A + "test_const", head)
    try:
        d = decide(guard)
        assert d.tests == (A + "test_const",)
        assert d.reasons[A + "test_const"][0].confidence == 1.0
        # and for its callers: a function that calls `unused` now selects the repaired test
        subprocess.run(
            ["git", "-C", str(guard.settings.repo), "checkout", "-q", "--", "."], check=True
        )
        edit(
            guard,
            "pkg/core.py",
            "def mul(a, b):\n    return a * b",
            "def mul(a, b):\n    return a * b\n\n\ndef calls_unused(a):\n    return unused(a)",
        )
        subprocess.run(
            ["git", "-C", str(guard.settings.repo), "commit", "-qam", "caller"], check=True
        )
        from guard_adapters.index.ingest import ingest_static

        ingest_static(guard.settings.repo, guard.store, include_tests=True)
        edit(guard, "pkg/core.py", "    return unused(a)", "    return unused(a) + 1")
        d = guard.check(base="HEAD")
        assert A + "test_const" in d.tests
        assert any(r.rule == "repaired-callee" for r in d.reasons[A + "test_const"])
    finally:
        subprocess.run(
            ["git", "-C", str(guard.settings.repo), "reset", "-q", "--hard", "HEAD~1"], check=False
        )
        ingest_static(guard.settings.repo, guard.store, include_tests=True)
        guard.store._query("MATCH ()-[c:COVERED_BY {source: 'miss_repair'}]->() DELETE c")


def test_new_method_selects_tests_of_same_named_methods(guard: Guard) -> None:
    edit(
        guard,
        "pkg/core.py",
        "    def double(self, x):",
        "    def setup(self, *a):\n        return self\n\n    def double(self, x):",
    )
    d = decide(guard)
    # the added `setup` shadows the first one (same name): their tests are selected
    assert {A + "test_add", B + "test_double", B + "test_ready"} <= set(d.tests)


def test_unreachable_store_is_run_all_not_an_error(ingested: tuple[Path, str], tmp_path: Path
                                                   ) -> None:  # fmt: skip
    repo, _ = ingested
    env = {**os.environ, "GUARD_FALKORDB_URL": f"unix://{tmp_path}/none.sock",
           "GUARD_GRAPH": "x"}  # fmt: skip
    out = subprocess.run(
        [sys.executable, "-m", "guard_adapters.cli", "check", "--repo", str(repo), "--json"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    decision = json.loads(out.stdout)
    jsonschema.validate(decision, SCHEMA)
    assert decision["level"] == "run-all"
    assert decision["overrides"][0]["kind"] == "store"
    assert "unreachable" in decision["overrides"][0]["detail"]
    run = subprocess.run(
        [sys.executable, "-m", "guard_adapters.cli", "run", "--repo", str(repo)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert run.returncode == 0, run.stdout + run.stderr  # the whole suite ran, and passed
    assert "7 passed" in run.stdout or "8 passed" in run.stdout


def test_removing_an_imported_name_selects_the_importers(tmp_path: Path, falkordb_url: str
                                                         ) -> None:  # fmt: skip
    """`from m import gone` fails at import: every test that imports the importer must run,
    although none of them ever executed `gone`."""
    repo = make_repo(tmp_path / "r", {
        "pkg/__init__.py": "",
        "pkg/base.py": "def gone():\n    return 1\n\n\ndef kept():\n    return 2\n",
        "pkg/user.py": "from pkg.base import gone, kept\n\n\ndef use():\n    return kept()\n",
        "tests/test_user.py": "from pkg.user import use\n\n\ndef test_use():\n"
                              "    assert use() == 2\n",
        "tests/test_other.py": "def test_other():\n    assert True\n",
    })  # fmt: skip
    with fresh_ingest(repo, falkordb_url, "rm") as g:
        (repo / "pkg/base.py").write_text("def kept():\n    return 2\n")
        d = g.check()
        # the importer's module body runs at import time, which the ingest charges to
        # every test: wider than the true set, never narrower
        assert "tests/test_user.py::test_use" in d.tests
        assert "imports-removed-name" in [r.rule for r in d.reasons["tests/test_user.py::test_use"]]
        assert g.run(stream=False).exit_code == 1


def test_import_time_bindings_are_followed_not_widened(tmp_path: Path, falkordb_url: str
                                                       ) -> None:  # fmt: skip
    """BASE feeds FACTOR at import time: changing BASE selects FACTOR's readers only. A
    module-level call that reads it selects every importer, unless importing the module before
    and after shows what changed (the import probe): then FACTOR's readers, if its value did."""
    repo = make_repo(tmp_path / "r", {
        "pkg/__init__.py": "",
        "pkg/conf.py": "BASE = 2\nFACTOR = BASE * 3\n\n\ndef factor():\n    return FACTOR\n\n\n"
                       "def other():\n    return 1\n",
        "tests/test_conf.py": "from pkg.conf import factor, other\n\n\ndef test_factor():\n"
                              "    assert factor() == 6\n\n\ndef test_other():\n"
                              "    assert other() == 1\n",
    })  # fmt: skip
    conf = repo / "pkg/conf.py"
    original = conf.read_text()
    with fresh_ingest(repo, falkordb_url, "bind") as g:
        conf.write_text(original.replace("BASE = 2", "BASE = 5"))
        d = g.check()
        assert d.tests == ("tests/test_conf.py::test_factor",)
        assert d.reasons[d.tests[0]][0].rule == "reads-changed-name"
        conf.write_text(original.replace("FACTOR = BASE * 3", "FACTOR = print(BASE) or 7"))
        d = g.check()  # FACTOR's statement now calls something, and FACTOR is 7
        assert d.tests == ("tests/test_conf.py::test_factor",), d.reasons
        conf.write_text(original.replace("FACTOR = BASE * 3", "FACTOR = print(BASE) or 6"))
        assert g.check().tests == ()  # imported before and after: nothing but stdout differs
        with without_import_probe(g) as plain:
            d = plain.check()  # without the probe, every importer runs
        assert set(d.tests) == {
            "tests/test_conf.py::test_factor",
            "tests/test_conf.py::test_other",
        }


def test_a_new_file_in_a_listed_folder_selects_the_tests_that_list_it(
    tmp_path: Path, falkordb_url: str
) -> None:
    repo = make_repo(tmp_path / "r", {
        "pkg/__init__.py": "",
        "pkg/load.py": "import glob\nimport os\n\n\ndef fixtures():\n"
                       "    here = os.path.dirname(__file__)\n"
                       "    return sorted(glob.glob(os.path.join(here, 'data', '*.json')))\n\n\n"
                       "def other():\n    return 1\n",
        "pkg/data/a.json": "{}\n",
        "tests/test_load.py": "from pkg.load import fixtures, other\n\n\n"
                              "def test_count():\n    assert len(fixtures()) == 1\n\n\n"
                              "def test_other():\n    assert other() == 1\n",
    })  # fmt: skip
    with fresh_ingest(repo, falkordb_url, "dir") as g:
        (repo / "pkg/data/b.json").write_text("{}\n")
        d = g.check()
        assert d.tests == ("tests/test_load.py::test_count",)
        assert d.reasons[d.tests[0]][0].rule == "lists-changed-folder"
        assert g.run(stream=False).exit_code == 1


BRANCHY = (
    "def f(x):\n    y = x + 1\n    if x > 0:\n        y = 2 * y\n    z = y - 1\n    return z\n"
)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        # inside the branch only the positive test ran: only it can observe the change
        ("y = 2 * y", "y = 3 * y", {"test_pos"}),
        # a shared line, and code inserted where every call passes
        ("z = y - 1", "z = y - 2", {"test_pos", "test_neg"}),
        ("    z = y - 1\n", "    y = y + 0\n    z = y - 1\n", {"test_pos", "test_neg"}),
        # a new path (an else clause) cannot be placed on one test's path: every test of f
        (
            "        y = 2 * y\n",
            "        y = 2 * y\n    else:\n        y = 7\n",
            {"test_pos", "test_neg"},
        ),
        # new code at the end of the body: who falls through is not recorded, so every test
        ("    return z\n", "    return z\n    print('unreachable')\n", {"test_pos", "test_neg"}),
    ],
)
def test_line_evidence_narrows_a_body_edit_to_the_tests_that_reach_it(
    tmp_path: Path, falkordb_url: str, old: str, new: str, expected: set[str]
) -> None:
    repo = make_repo(tmp_path / "r", {
        "pkg/__init__.py": "",
        "pkg/m.py": BRANCHY,
        "tests/test_m.py": "from pkg.m import f\n\n\ndef test_pos():\n    assert f(1) == 3\n\n\n"
                           "def test_neg():\n    assert f(-1) == -1\n",
    })  # fmt: skip
    with fresh_ingest(repo, falkordb_url, "lines") as g:
        (repo / "pkg/m.py").write_text(BRANCHY.replace(old, new, 1))
        d = decide(g)
        assert {t.split("::")[-1] for t in d.tests} == expected
        breaks = any(s in new for s in ("3 * y", "- 2", "y = 7"))
        assert g.run(stream=False).exit_code == (1 if breaks else 0)
        with Guard.open(
            repo, env={}, falkordb_url=g.settings.falkordb_url, graph=g.settings.graph
        ) as wide:  # the ablation
            wide.variant = Variant(line_evidence=False)
            assert len(wide.check().tests) == 2


def test_widening_skips_tests_tied_to_the_module_only_by_import_time_code(
    tmp_path: Path, falkordb_url: str
) -> None:
    repo = make_repo(tmp_path / "widen", {
        "pkg/__init__.py": "from pkg.registry import register\n\nregister('boot')\n",
        "pkg/registry.py": "ITEMS = []\n\n\ndef register(name):\n    ITEMS.append(name)\n\n\n"
                           "def find(name):\n    return [i for i in ITEMS if i == name]\n",
        "tests/test_find.py": "from pkg.registry import find\n\n\n"
                              "def test_find():\n    assert find('boot') == ['boot']\n",
        "tests/test_other.py": "import pkg\n\n\ndef test_other():\n    assert pkg\n",
    })  # fmt: skip
    with fresh_ingest(repo, falkordb_url, "widen") as g:
        # every test ran register() while pkg was first imported: shared, not its own doing
        shared = dict(g.store._read(  # type: ignore[attr-defined]
            "MATCH (:Function {id: 'pkg/registry.py::register'})-[c:COVERED_BY]->(t:Test) "
            "RETURN t.id, c.shared"))  # fmt: skip
        assert shared == {"tests/test_find.py::test_find": True,
                          "tests/test_other.py::test_other": True}  # fmt: skip
        edit(g, "pkg/registry.py", "if i == name", "if getattr(i, '__' + 'eq__')(name)")
        literal = seeded(g)  # widens always
        try:
            d = literal.check()
        finally:
            literal.close()
        assert "dynamic_widening" in [o.kind for o in d.overrides]
        assert d.tests == ("tests/test_find.py::test_find",)
