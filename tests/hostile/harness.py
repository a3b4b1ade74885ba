"""What every hostile scenario shares: the sample project, the `guard` CLI in a subprocess, and
the invariants (wider selection or a short exit-2 error, no traceback, no false pass, the tree,
the index and the graph left exactly as they were).

Each scenario asserts the correct, safe behaviour. Some fail on a Guard that still has the bugs
of issue 12: that is the point of the suite, so nothing here is marked xfail."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

TRACEBACK = "Traceback (most recent call last)"
GUARD_FRAME = re.compile(r"File \"[^\"]*(guard_core|guard_adapters)[/\\]")
CLI_TIMEOUT = 120.0

# -- the sample project ------------------------------------------------------------------------

SAMPLE: dict[str, str] = {
    "pyproject.toml": (
        '[project]\nname = "sample"\nversion = "0.1"\n\n'
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'
    ),
    ".gitignore": "__pycache__/\n.pytest_cache/\n",
    "pkg/__init__.py": '"""A small package for Guard\'s hostile-input suite."""\n',
    "pkg/helpers.py": (
        "def double(x):\n    return x * 2\n\n\n"
        "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n"
    ),
    "pkg/core.py": (
        "from pkg.helpers import clamp, double\n\n"
        "LIMIT = 100\n\n\n"
        "def add(a, b):\n    return clamp(a + b, 0, LIMIT)\n\n\n"
        "def mul(a, b):\n    return a * b\n\n\n"
        "def unused(a):\n    return -a\n\n\n"
        "class Calc:\n"
        "    def __init__(self, base=0):\n        self.base = base\n\n"
        "    def twice(self, x):\n        return double(x) + self.base\n"
    ),
    "pkg/optional.py": (
        "try:\n    from pkg.extra import EXTRA\nexcept ImportError:\n    EXTRA = None\n\n\n"
        "def extra_enabled():\n    return EXTRA is not None\n"
    ),
    "pkg/dyn.py": (
        "import importlib\n\n\n"
        "def has_backend():\n"
        "    try:\n        importlib.import_module('pkg.backend')\n"
        "    except ImportError:\n        return False\n    return True\n\n\n"
        "def has_accel():\n"
        "    try:\n        __import__('pkg.accel')\n"
        "    except ImportError:\n        return False\n    return True\n"
    ),
    "pkg/plugins/__init__.py": (
        "import pkgutil\n\n\n"
        "def discovered():\n    return sorted(m.name for m in pkgutil.iter_modules(__path__))\n"
    ),
    "pkg/plugins/alpha.py": "NAME = 'alpha'\n",
    "pkg/loader.py": (
        "import os\n\n"
        "HERE = os.path.join(os.path.dirname(__file__), 'rules')\n\n\n"
        "def rules():\n    return sorted(n for n in os.listdir(HERE) if n.endswith('.py'))\n"
    ),
    "pkg/rules/base.py": "RULE = 'base'\n",
    "pkg/text.py": (
        "from pathlib import Path\n\n\n"
        "def words():\n"
        "    return (Path(__file__).parent / 'data' / 'words.txt').read_text().split()\n"
    ),
    "pkg/data/words.txt": "alpha\nbeta\n",
    "pkg/cli.py": (
        "def greet(name):\n    return f'hello {name}'\n\n\n"
        "def main():\n    print(greet('world'))\n\n\n"
        "if __name__ == '__main__':\n    main()\n"
    ),
    # tests/ is not a package: pytest puts it on sys.path (rootdir-relative "prepend" mode)
    "tests/conftest.py": (
        "import pytest\n\nfrom pkg.core import Calc\n\n\n"
        "@pytest.fixture\ndef calc():\n    return Calc(base=1)\n"
    ),
    "tests/util_t.py": "def expect_twice(x):\n    return 2 * x + 1\n",
    "tests/test_core.py": (
        "import pytest\nfrom util_t import expect_twice\n\n"
        "from pkg.core import add, mul\n\n\n"
        "def test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_add_clamped():\n    assert add(99, 99) == 100\n\n\n"
        "def test_mul():\n    assert mul(3, 4) == 12\n\n\n"
        "@pytest.mark.parametrize('x', [1, 2, 3])\n"
        "def test_mul_param(x):\n    assert mul(x, 1) == x\n\n\n"
        "def test_twice(calc):\n    assert calc.twice(3) == expect_twice(3)\n\n\n"
        "class TestCalc:\n    def test_base(self, calc):\n        assert calc.base == 1\n"
    ),
    "tests/test_helpers.py": (
        "from pkg.helpers import clamp, double\n\n\n"
        "def test_double():\n    assert double(4) == 8\n\n\n"
        "def test_clamp():\n    assert clamp(5, 0, 3) == 3\n"
    ),
    "tests/test_optional.py": (
        "from pkg import dyn, optional\n\n\n"
        "def test_extra_absent():\n    assert not optional.extra_enabled()\n\n\n"
        "def test_no_backend():\n    assert not dyn.has_backend()\n\n\n"
        "def test_no_accel():\n    assert not dyn.has_accel()\n"
    ),
    "tests/test_plugins.py": (
        "from pkg.loader import rules\nfrom pkg.plugins import discovered\n\n\n"
        "def test_discovered():\n    assert discovered() == ['alpha']\n\n\n"
        "def test_rules():\n    assert rules() == ['base.py']\n"
    ),
    "tests/test_text.py": (
        "from pkg.text import words\n\n\n"
        "def test_words():\n    assert words() == ['alpha', 'beta']\n"
    ),
    "tests/test_cli.py": (
        "import subprocess\nimport sys\nfrom pathlib import Path\n\n"
        "ROOT = Path(__file__).resolve().parents[1]\n\n\n"
        "def test_cli_runs():\n"
        "    out = subprocess.run([sys.executable, '-m', 'pkg.cli'], cwd=ROOT,\n"
        "                         capture_output=True, text=True, check=True)\n"
        "    assert out.stdout == 'hello world\\n'\n"
    ),
    "tests/test_stdlib.py": (
        "import json\nimport colorsys\n\n\n"
        "def test_json_roundtrip():\n    assert json.loads(json.dumps({'a': 1})) == {'a': 1}\n\n\n"
        "def test_colorsys():\n    assert colorsys.rgb_to_hsv(1.0, 0.0, 0.0) == (0.0, 1.0, 1.0)\n"
    ),
    "tests/deep/test_deep.py": ("def test_deep_fixture(calc):\n    assert calc.twice(1) == 3\n"),
}

C = "tests/test_core.py::"
SUITE: tuple[str, ...] = (
    C + "test_add", C + "test_add_clamped", C + "test_mul", C + "test_mul_param",
    C + "test_twice", C + "TestCalc::test_base",
    "tests/test_helpers.py::test_double", "tests/test_helpers.py::test_clamp",
    "tests/test_optional.py::test_extra_absent", "tests/test_optional.py::test_no_backend",
    "tests/test_optional.py::test_no_accel",
    "tests/test_plugins.py::test_discovered", "tests/test_plugins.py::test_rules",
    "tests/test_text.py::test_words", "tests/test_cli.py::test_cli_runs",
    "tests/test_stdlib.py::test_json_roundtrip", "tests/test_stdlib.py::test_colorsys",
    "tests/deep/test_deep.py::test_deep_fixture",
)  # fmt: skip
"""Every test of the sample, parametrisations collapsed (one Guard Test per function)."""


# -- git and the sample repository -------------------------------------------------------------

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
}  # fmt: skip


def git(repo: Path, *args: str, check: bool = True) -> str:
    """Git for the test's own bookkeeping: never the user's config, never the hostile one."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    out = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, env={**env, **GIT_ENV}, check=False
    )
    if check and out.returncode != 0:
        raise AssertionError(f"git {args} failed: {out.stderr.decode(errors='replace')}")
    return out.stdout.decode("utf-8", "surrogateescape")


def build_repo(root: Path, files: Mapping[str, str | bytes], commit: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    for name, text in files.items():
        write(root, name, text)
    if commit:
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "initial")
    return root


def write(repo: Path, name: str, content: str | bytes) -> Path:
    path = repo / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def replace(repo: Path, name: str, old: str, new: str) -> None:
    path = repo / name
    text = path.read_text(encoding="utf-8")
    assert old in text, (name, old)
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


# -- the guard CLI -----------------------------------------------------------------------------


@attrs.frozen
class Result:
    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    elapsed_s: float

    def json(self) -> Any:
        try:
            return json.loads(self.stdout)
        except json.JSONDecodeError as exc:
            raise AssertionError(f"guard {self.describe()} printed no JSON: {exc}") from exc

    def describe(self) -> str:
        return (
            f"{' '.join(self.args)} -> exit {self.returncode} in {self.elapsed_s:.1f}s\n"
            f"--- stdout\n{self.stdout[-3000:]}\n--- stderr\n{self.stderr[-3000:]}"
        )


def guard_env(url: str, graph: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GUARD_", "GIT_"))}
    return {
        **base,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GUARD_WORKER": "0",
        "GUARD_FALKORDB_URL": url,
        "GUARD_GRAPH": graph,
        "GUARD_EVIDENCE_BASES": "1",  # the one graph the scenarios copy and restore by name
        "NO_COLOR": "1",
        **(extra or {}),
    }


def run_guard(
    env: Mapping[str, str],
    *args: str,
    cwd: Path | None = None,
    timeout: float = CLI_TIMEOUT,
) -> Result:
    import time

    started = time.perf_counter()
    try:
        out = subprocess.run(
            [sys.executable, "-m", "guard_adapters.cli", *args],
            capture_output=True, env=dict(env), cwd=cwd, timeout=timeout, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(
            f"guard {' '.join(args)} did not answer within {timeout:.0f}s"
        ) from exc
    return Result(
        tuple(args),
        out.returncode,
        out.stdout.decode("utf-8", "replace"),
        out.stderr.decode("utf-8", "replace"),
        time.perf_counter() - started,
    )


def assert_no_traceback(result: Result, *, guard_frames_only: bool = False) -> None:
    """No Python traceback. ``guard run`` streams pytest's output, where the target's own
    tracebacks are expected: there only a traceback through Guard's code counts."""
    text = result.stdout + result.stderr
    if guard_frames_only:
        assert not (TRACEBACK in text and GUARD_FRAME.search(text)), (
            "a traceback through Guard's code: " + result.describe()
        )
    else:
        assert TRACEBACK not in text, "a Python traceback: " + result.describe()


def assert_clear_error(result: Result) -> None:
    """A short, clear error: exit 2, a message, no traceback."""
    assert_no_traceback(result)
    assert result.returncode == 2, "expected a clear exit-2 error: " + result.describe()
    message = result.stderr.strip() or result.stdout.strip()
    assert message, result.describe()
    assert len(message.splitlines()) <= 15, result.describe()


def strip_params(test_id: str) -> str:
    return test_id.split("[", 1)[0]


def _runs(entry: str, test_id: str) -> bool:
    """Does running ``entry`` (a node id, a file or a folder) run ``test_id``?"""
    entry, test_id = strip_params(entry), strip_params(test_id)
    return (
        entry == test_id
        or test_id.startswith(entry + "::")
        or test_id.startswith(entry.rstrip("/") + "/")
        or entry in ("", ".", "tests", "tests/")
    )


def selected(decision: Mapping[str, Any], test_id: str) -> bool:
    tests = decision.get("tests")
    if tests is None:
        return decision.get("level") == "run-all"
    return any(_runs(entry, test_id) for entry in tests)


def assert_decision_shape(decision: Mapping[str, Any], suite: Iterable[str]) -> None:
    """The run-all contract: ``tests`` is ``null`` (the whole suite) or a non-empty list that
    holds every test of the suite, new untracked ones included; never ``[]``."""
    assert decision.get("schema") == "guard.decision/1", decision
    assert decision.get("level") in ("subset", "medium", "run-all"), decision
    tests = decision.get("tests")
    if decision["level"] == "run-all":
        assert tests is None or (isinstance(tests, list) and tests), (
            f"run-all with tests={tests!r}: a consumer that runs `tests` runs nothing"
        )
        if tests is not None:
            missing = [t for t in suite if not any(_runs(e, t) for e in tests)]
            assert not missing, f"run-all whose tests omit {missing}; {summary(decision)}"
    else:
        assert isinstance(tests, list), decision


def assert_wider(decision: Mapping[str, Any], must: Iterable[str], suite: Iterable[str]) -> None:
    """Every test the edit breaks is selected (or the whole suite runs), never fewer."""
    assert_decision_shape(decision, suite)
    missing = [t for t in must if not selected(decision, t)]
    shown = missing if len(missing) <= 3 else [*missing[:3], f"... {len(missing)} in all"]
    assert not missing, f"escape: {shown} not selected; {summary(decision)}"


def assert_error_or_wider(result: Result, must: Iterable[str], suite: Iterable[str]) -> None:
    """Either a short, clear exit-2 error, or a decision that selects every test in ``must``;
    never a traceback."""
    assert_no_traceback(result)
    if result.returncode == 2:
        assert_clear_error(result)
    else:
        assert result.returncode == 0, result.describe()
        assert_wider(result.json(), must, suite)


def summary(decision: Mapping[str, Any]) -> str:
    tests = decision.get("tests")
    shown = tests if tests is None or len(tests) <= 6 else [*tests[:6], f"... {len(tests)} in all"]
    kinds = [o.get("kind") for o in decision.get("overrides") or []]
    return f"level={decision.get('level')} overrides={kinds} tests={shown}"


# -- invariants: the tree, the index and the graph ---------------------------------------------

_CACHES = {".git", ".guard", "__pycache__", ".pytest_cache"}


def tree_state(repo: Path) -> dict[str, str]:
    """What the user owns: the working tree (every file's bytes, symlinks by target), the
    index, the stash and HEAD; compare two with :func:`tree_changes`."""
    state: dict[str, str] = {}
    if (repo / ".git").exists():
        for args in (
            ("status", "--porcelain=v2", "-z", "--untracked-files=all"),
            ("ls-files", "-s", "-z"),
            ("stash", "list"),
            ("rev-parse", "--verify", "-q", "HEAD"),
            ("symbolic-ref", "-q", "HEAD"),
        ):
            state["git " + " ".join(args)] = git(repo, *args, check=False)
    for dirpath, dirnames, filenames in os.walk(repo, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in _CACHES)
        here = Path(dirpath)
        for name in sorted(filenames) + [d for d in dirnames if (here / d).is_symlink()]:
            path = here / name
            key = os.fsdecode(path.relative_to(repo))
            if path.is_symlink():
                state[key] = "-> " + os.readlink(path)
            else:
                state[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return state


def tree_changes(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    changes = []
    for key in sorted(set(before) | set(after)):
        if before.get(key) != after.get(key):
            if key.startswith("git "):
                changes.append(f"{key}: {before.get(key)!r} -> {after.get(key)!r}")
            elif key in before and key in after:
                changes.append(f"{key}: changed")
            else:
                changes.append(f"{key}: {'added' if key in after else 'removed'}")
    return changes


def graph_census(url: str, graph: str) -> dict[str, int]:
    """Nodes per label and edges per type, read straight from FalkorDB (cheaper than a
    `guard stats` process per scenario, and independent of the code under test)."""
    from falkordb import FalkorDB

    db = FalkorDB.from_url(url)
    try:
        g = db.select_graph(graph)
        census: dict[str, int] = {}
        for query, prefix in (
            ("MATCH (n) RETURN labels(n), count(n)", "node"),
            ("MATCH ()-[r]->() RETURN type(r), count(r)", "edge"),
        ):
            try:
                rows = g.ro_query(query).result_set
            except Exception as exc:  # a graph that does not exist yet is empty
                assert "empty key" in str(exc) or "Invalid graph" in str(exc), exc
                rows = []
            for kind, count in rows:
                census[f"{prefix}:{':'.join(kind) if isinstance(kind, list) else kind}"] = count
        return census
    finally:
        db.connection.close()


def graph_counts(env: Mapping[str, str], repo: Path) -> dict[str, Any]:
    out = run_guard(env, "stats", "--json", "--repo", str(repo))
    assert out.returncode == 0, out.describe()
    data = out.json()
    return {k: v for k, v in data.items() if not k.startswith("elapsed")}


def reset_tree(repo: Path, base: str) -> None:
    """Back to the committed sample: no merge, no index change, no untracked file."""
    git(repo, "merge", "--abort", check=False)
    git(repo, "checkout", "-q", "-f", "main", check=False)
    git(repo, "reset", "-q", "--hard", base)
    git(repo, "clean", "-qfdx")  # .guard/ too: the suite's stores are all shared servers
    git(repo, "stash", "clear")


def unique_graph(label: str) -> str:
    return f"test:hostile-{label}-{uuid.uuid4().hex[:8]}"


def copy_tree(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns(".guard"))
    return dst
