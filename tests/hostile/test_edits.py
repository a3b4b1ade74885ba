"""Hostile edits: unparsable, non-UTF-8 and binary files; deleted, renamed and new modules and
packages (optional imports, importlib, __import__, plug-in folders, shadowing names); huge
diffs; code run only in a subprocess; a plug-in policy that votes subset."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hostile.conftest import Sample
from tests.hostile.harness import SUITE, C, git, replace, selected, write

TEXT = "tests/test_text.py::test_words"
CORE = [t for t in SUITE if t.startswith(C)]
CALC_USERS = [
    C + "test_twice",
    C + "TestCalc::test_base",
    "tests/deep/test_deep.py::test_deep_fixture",
]
NEW_TEST = "tests/test_new.py::test_new_fails"
NEW_TEST_FILE = "def test_new_fails():\n    assert 1 + 1 == 3\n"


def break_mul(repo: Path) -> None:
    replace(repo, "pkg/core.py", "return a * b", "return a * b + 1")


def _git_rm(repo: Path) -> None:
    git(repo, "rm", "-q", "pkg/helpers.py")


def _git_mv(repo: Path) -> None:
    git(repo, "mv", "pkg/helpers.py", "pkg/helpers2.py")


def _mv(repo: Path) -> None:
    (repo / "pkg/helpers.py").rename(repo / "pkg/helpers2.py")


def _rename_and_break(repo: Path) -> None:
    git(repo, "mv", "pkg/helpers.py", "pkg/utils.py")
    replace(repo, "pkg/utils.py", "return max(lo, min(x, hi))", "return max(lo, min(x, hi + 1))")
    replace(repo, "pkg/core.py", "from pkg.helpers import", "from pkg.utils import")
    replace(repo, "tests/test_helpers.py", "from pkg.helpers import", "from pkg.utils import")


def _rm_package(repo: Path) -> None:
    for path in sorted((repo / "pkg/plugins").rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    (repo / "pkg/plugins").rmdir()


def _huge_function_diff(repo: Path) -> None:
    lines = [f"def generated_{i}():\n    return {i}\n" for i in range(10_000)]
    path = repo / "pkg/core.py"
    path.write_text(path.read_text() + "\n\n" + "\n\n".join(lines))  # 20k+ added lines
    break_mul(repo)


def _huge_new_module(repo: Path) -> None:
    write(repo, "pkg/big.py", "".join(f"VALUE_{i} = {i}\n" for i in range(20_000)))
    replace(repo, "pkg/core.py", "return clamp(a + b, 0, LIMIT)", "return clamp(a - b, 0, LIMIT)")


EDITS: dict[str, tuple[Callable[[Path], object], list[str]]] = {
    # unparsable, non-UTF-8 and binary content
    "unparsable-module": (
        lambda r: replace(r, "pkg/core.py", "def mul(a, b):", "def mul(a, b:"),
        list(SUITE),
    ),
    "unparsable-test-file": (
        lambda r: replace(r, "tests/test_text.py", "def test_words():", "def test_words(:"),
        [TEXT],
    ),
    "non-utf8-undeclared": (
        lambda r: write(r, "pkg/core.py", (r / "pkg/core.py").read_bytes() + b"NAME = 'caf\xe9'\n"),
        list(SUITE),
    ),
    "latin1-declared-and-changed": (
        lambda r: write(
            r,
            "pkg/core.py",
            b"# -*- coding: latin-1 -*-\n# caf\xe9\n"
            + (r / "pkg/core.py").read_bytes().replace(b"return a * b", b"return a * b + 1"),
        ),
        [C + "test_mul", C + "test_mul_param"],
    ),
    "utf8-bom-and-changed": (
        lambda r: write(
            r,
            "pkg/core.py",
            b"\xef\xbb\xbf"
            + (r / "pkg/core.py").read_bytes().replace(b"return a * b", b"return a * b + 1"),
        ),
        [C + "test_mul", C + "test_mul_param"],
    ),
    "crlf-and-changed": (
        lambda r: write(
            r,
            "pkg/core.py",
            (r / "pkg/core.py")
            .read_bytes()
            .replace(b"return a * b", b"return a * b + 1")
            .replace(b"\n", b"\r\n"),
        ),
        [C + "test_mul", C + "test_mul_param"],
    ),
    "binary-module": (
        lambda r: write(r, "pkg/helpers.py", b"\x00\x01\x02\xff\xfe\x89PNG\r\n\x1a\n" * 64),
        list(SUITE),
    ),
    "binary-data-file": (
        lambda r: write(r, "pkg/data/words.txt", b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe"),
        [TEXT],
    ),
    "new-binary-files-untracked": (
        lambda r: (
            write(r, "pkg/blob.bin", bytes(range(256)) * 8),
            write(r, "pkg/garbage.py", b"\x00\xff" * 100),
        ),
        [],
    ),
    # deleted, renamed and new modules and packages
    "deleted-module": (lambda r: (r / "pkg/helpers.py").unlink(), list(SUITE)),
    "deleted-module-staged": (_git_rm, list(SUITE)),
    "renamed-module-staged": (_git_mv, list(SUITE)),
    "renamed-module-unstaged": (_mv, list(SUITE)),
    "renamed-module-and-edited": (
        _rename_and_break,
        [C + "test_add_clamped", "tests/test_helpers.py::test_clamp"],
    ),
    "deleted-package": (
        _rm_package,
        ["tests/test_plugins.py::test_discovered", "tests/test_plugins.py::test_rules"],
    ),
    "deleted-test-file": (lambda r: (r / "tests/test_text.py").unlink(), []),
    "new-package-shadows-module": (lambda r: write(r, "pkg/helpers/__init__.py", ""), list(SUITE)),
    "optional-import-try-except": (
        lambda r: write(r, "pkg/extra.py", "EXTRA = True\n"),
        ["tests/test_optional.py::test_extra_absent"],
    ),
    "importlib-import-module": (
        lambda r: write(r, "pkg/backend.py", "X = 1\n"),
        ["tests/test_optional.py::test_no_backend"],
    ),
    "dunder-import": (
        lambda r: write(r, "pkg/accel.py", "X = 1\n"),
        ["tests/test_optional.py::test_no_accel"],
    ),
    "plugin-folder-pkgutil-module": (
        lambda r: write(r, "pkg/plugins/beta.py", "NAME = 'beta'\n"),
        ["tests/test_plugins.py::test_discovered"],
    ),
    "plugin-folder-pkgutil-package": (
        lambda r: write(r, "pkg/plugins/gamma/__init__.py", ""),
        ["tests/test_plugins.py::test_discovered"],
    ),
    "plugin-folder-listdir": (
        lambda r: write(r, "pkg/rules/extra_rule.py", "RULE = 'extra'\n"),
        ["tests/test_plugins.py::test_rules"],
    ),
    "shadow-stdlib-json-in-tests": (
        lambda r: write(
            r, "tests/json.py", "def loads(s):\n    return None\n\n\ndef dumps(o):\n    return ''\n"
        ),
        ["tests/test_stdlib.py::test_json_roundtrip"],
    ),
    "shadow-stdlib-colorsys-in-tests": (
        lambda r: write(r, "tests/colorsys.py", "def rgb_to_hsv(*a):\n    return None\n"),
        ["tests/test_stdlib.py::test_colorsys"],
    ),
    "shadow-helper-with-package": (
        lambda r: write(r, "tests/util_t/__init__.py", ""),
        [C + "test_twice"],
    ),
    "new-conftest-overrides-fixture": (
        lambda r: write(
            r,
            "tests/deep/conftest.py",
            "import pytest\n\nfrom pkg.core import Calc\n\n\n"
            "@pytest.fixture\ndef calc():\n    return Calc(base=5)\n",
        ),
        ["tests/deep/test_deep.py::test_deep_fixture"],
    ),
    "new-root-conftest-autouse": (
        lambda r: write(
            r,
            "conftest.py",
            "import pytest\n\n\n@pytest.fixture(autouse=True)\ndef _boom():\n"
            "    raise RuntimeError('new root conftest')\n",
        ),
        list(SUITE),
    ),
    "new-init-makes-tests-a-package": (lambda r: write(r, "tests/__init__.py", ""), CORE),
    "new-untracked-test-file": (lambda r: write(r, "tests/test_new.py", NEW_TEST_FILE), [NEW_TEST]),
    "new-untracked-test-package": (
        lambda r: (
            write(r, "tests/newpkg/__init__.py", ""),
            write(r, "tests/newpkg/test_inner.py", "def test_inner():\n    assert False\n"),
        ),
        ["tests/newpkg/test_inner.py::test_inner"],
    ),
    # size
    "diff-20k-lines-in-module": (_huge_function_diff, [C + "test_mul", C + "test_mul_param"]),
    "new-20k-line-module-and-edit": (_huge_new_module, [C + "test_add"]),
    # code run only in a child interpreter
    "subprocess-python-m": (
        lambda r: replace(r, "pkg/cli.py", "f'hello {name}'", "f'bye {name}'"),
        ["tests/test_cli.py::test_cli_runs"],
    ),
    # the class-attribute / constant path must not lose the fixture's users
    "conftest-fixture-edit": (
        lambda r: replace(r, "tests/conftest.py", "Calc(base=1)", "Calc(base=2)"),
        CALC_USERS,
    ),
}

NEW_TESTS = {
    "new-untracked-test-file": [NEW_TEST],
    "new-untracked-test-package": ["tests/newpkg/test_inner.py::test_inner"],
}
GONE = {"deleted-test-file": [TEXT]}
# pytest imports json itself before any test module, so the shadow does not fail under pytest;
# a fresh interpreter on the test path would import it: the importer must still be selected
NO_FAILURE = {"shadow-stdlib-json-in-tests"}


@pytest.mark.parametrize("name", list(EDITS))
def test_hostile_edit_widens_and_never_false_passes(sample: Sample, name: str) -> None:
    edit, must = EDITS[name]
    edit(sample.repo)
    suite = [t for t in SUITE if t not in GONE.get(name, [])] + NEW_TESTS.get(name, [])
    decision = sample.check(suite=suite, timeout=120)
    from tests.hostile.harness import assert_wider

    assert_wider(decision, must, suite)
    sample.assert_graph_unchanged()
    if must and name not in NO_FAILURE:
        sample.assert_run_fails()
    else:
        run = sample.run()
        assert run.returncode in (0, 1), run.describe()


def test_run_all_lists_new_untracked_tests(sample: Sample) -> None:
    """An environment file forces run-all: `tests` is null or holds every test, the new
    untracked test file's included."""
    replace(sample.repo, "pyproject.toml", 'version = "0.1"', 'version = "0.2"')
    write(sample.repo, "tests/test_new.py", NEW_TEST_FILE)
    suite = [*SUITE, NEW_TEST]
    decision = sample.check(suite=suite)
    assert decision["level"] == "run-all", decision
    assert selected(decision, NEW_TEST), decision["tests"]
    sample.assert_run_fails()


# -- plug-ins that vote subset or try to narrow --------------------------------------------

POLICY_PLUGIN = """
import attrs
from guard_core import Level, TrustComponents, hookimpl
from guard_core.ports import Vote


class Yes:
    name = "mine"

    def vote(self, data):
        return Vote(level=Level.SUBSET, trust=1.0,
                    components=TrustComponents(1.0, 1.0, 0.0), policy="mine")


@hookimpl
def guard_register_adapters(registry):
    registry.add_trust_policy("default", lambda settings: Yes())  # replaces the built-in
    registry.add_trust_policy("mine", lambda settings: Yes())


@hookimpl
def guard_trust_vote(data):
    return Yes().vote(data)


@hookimpl
def guard_adjust_decision(decision, data):
    return attrs.evolve(decision, level=Level.SUBSET, trust=1.0, tests=(), reasons={},
                        overrides=())
"""


@pytest.fixture
def subset_plugin(tmp_path: Path) -> dict[str, str]:
    """A third-party plug-in found through the `guard` entry-point group (a dist-info on the
    path, as `pip install` would leave it) that votes subset and proposes an empty selection."""
    import os

    (tmp_path / "hostile_policy.py").write_text(POLICY_PLUGIN)
    info = tmp_path / "hostile_policy-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hostile-policy\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[guard]\nhostile = hostile_policy\n")
    path = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path}


@pytest.mark.parametrize(
    "name",
    [
        "conftest-fixture-edit",
        "new-conftest-overrides-fixture",
        "unparsable-module",
        "optional-import-try-except",
        "subprocess-python-m",
    ],
)
def test_subset_voting_plugin_cannot_narrow(
    sample: Sample, subset_plugin: dict[str, str], name: str
) -> None:
    edit, must = EDITS[name]
    edit(sample.repo)
    decision = sample.check(env=subset_plugin)
    from tests.hostile.harness import assert_wider

    assert_wider(decision, must, SUITE)
    assert decision["tests"] is None or decision["tests"], "plug-in turned the edit into 0 tests"
    sample.assert_run_fails(env=subset_plugin)


# -- a broken pyproject.toml ---------------------------------------------------------------


def _break_pyproject(repo: Path) -> None:
    write(repo, "pyproject.toml", "[tool.guard\npolicies = [\n")


def test_broken_pyproject_stats_warns_then_reports(sample: Sample) -> None:
    from tests.hostile.harness import assert_no_traceback, graph_counts

    expected = graph_counts(sample.env, sample.repo)
    _break_pyproject(sample.repo)
    out = sample.guard("stats", "--json", "--repo", str(sample.repo))
    assert_no_traceback(out)
    assert out.returncode == 0, out.describe()
    assert "pyproject" in out.stderr, "no warning about the broken config\n" + out.describe()
    data = out.json()
    assert {k: v for k, v in data.items() if not k.startswith("elapsed")} == expected


@pytest.mark.parametrize("command", ["callers", "covering-tests"])
def test_broken_pyproject_queries_go_on(sample: Sample, command: str) -> None:
    _break_pyproject(sample.repo)
    out = sample.guard(command, "--repo", str(sample.repo), "--json", "pkg/core.py::mul")
    from tests.hostile.harness import assert_no_traceback

    assert_no_traceback(out)
    assert out.returncode == 0, out.describe()


def test_broken_pyproject_check_is_run_all(sample: Sample) -> None:
    _break_pyproject(sample.repo)
    break_mul(sample.repo)
    decision = sample.check()
    assert decision["level"] == "run-all", decision
    sample.assert_run_fails()


@pytest.fixture(scope="module")
def mine_shared(sample_factory: Callable[..., Sample]) -> Sample:
    """The sample whose pyproject chooses the plug-in's policy by name: only it votes."""
    from tests.hostile.harness import SAMPLE

    files = {
        **SAMPLE,
        "pyproject.toml": SAMPLE["pyproject.toml"] + '\n[tool.guard]\npolicies = ["mine"]\n',
    }
    return sample_factory("edits-mine", files)


@pytest.mark.parametrize(
    "name", ["conftest-fixture-edit", "new-conftest-overrides-fixture", "unparsable-test-file"]
)
def test_policy_chosen_by_name_votes_subset(
    mine_shared: Sample, subset_plugin: dict[str, str], name: str
) -> None:
    from tests.hostile.harness import assert_wider

    mine_shared.reset()
    try:
        edit, must = EDITS[name]
        edit(mine_shared.repo)
        decision = mine_shared.check(env=subset_plugin)
        assert_wider(decision, must, SUITE)
        mine_shared.assert_run_fails(env=subset_plugin)
    finally:
        mine_shared.reset()
