"""The examples in examples/ work as their docstrings say."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from guard_core import Guard, GuardError, Level
from tests.conftest import make_repo

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PROJECT = {
    "pkg/__init__.py": "",
    "pkg/calc.py": "def add(a, b):\n    return a + b\n\n\ndef neg(a):\n    return -a\n",
    "migrations/step.py": "STEP = 1\n",
    "tests/test_calc.py": (
        "from pkg.calc import add, neg\n\n\n"
        "def test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_neg():\n    assert neg(2) == -2\n"
    ),
}


@pytest.fixture
def ingested(tmp_path: Path, guard_env: str) -> Path:
    repo = make_repo(tmp_path / "proj", PROJECT)
    out = subprocess.run([sys.executable, "-m", "guard_adapters.cli", "ingest-coverage", str(repo)],
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return repo


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_agent_loop_keeps_a_good_edit_and_rolls_back_a_bad_one(ingested: Path) -> None:
    script = str(EXAMPLES / "agent_loop.py")

    def attempt(old: str, new: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, script, str(ingested), "pkg/calc.py", old, new],
                              capture_output=True, text=True)  # fmt: skip

    bad = attempt("return a + b", "return a - b")
    assert bad.returncode == 1, bad.stderr
    assert "tests/test_calc.py::test_add <- covers pkg/calc.py::add" in bad.stdout
    assert "rolled back: tests/test_calc.py::test_add" in bad.stdout
    assert (ingested / "pkg/calc.py").read_text() == PROJECT["pkg/calc.py"]
    good = attempt("return -a", "return 0 - a")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "edit kept: 1 selected tests pass" in good.stdout


def test_strict_policy_plugin_widens_protected_paths_and_adds_smoke_tests(
    ingested: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = EXAMPLES / "strict_policy_plugin"
    meta = tomllib.loads((folder / "pyproject.toml").read_text())
    target = meta["project"]["entry-points"]["guard"]["strict-policy"]
    monkeypatch.syspath_prepend(str(folder))
    plugin = __import__(target)  # the object the entry point names
    monkeypatch.setenv("GUARD_ALWAYS_RUN", "tests/test_calc.py::test_neg")
    (ingested / "pkg/calc.py").write_text(PROJECT["pkg/calc.py"].replace("a + b", "b + a"))
    with Guard.open(ingested, plugins=[plugin]) as guard:
        decision = guard.check()
        assert decision.level is Level.SUBSET
        assert set(decision.tests) == {
            "tests/test_calc.py::test_add",
            "tests/test_calc.py::test_neg",
        }
        assert (
            decision.to_json()["reasons"]["tests/test_calc.py::test_neg"][0]["rule"] == "always-run"
        )
        (ingested / "migrations/step.py").write_text("STEP = 2\n")
        decision = guard.check()
    assert decision.level is Level.RUN_ALL
    assert any(o.kind == "protected-path" for o in decision.overrides)


def test_the_guard_group_mounts_in_another_cli(ingested: Path) -> None:
    script = str(EXAMPLES / "embed_cli.py")
    run = subprocess.run([sys.executable, script, "guard", "check", "--repo", str(ingested),
                          "--json"], capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["schema"] == "guard.decision/1"
    helped = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True)
    assert "guard" in helped.stdout and "hello" in helped.stdout


def test_wrapped_runner_plugin_replaces_the_runner_through_the_runner_setting(
    tmp_path: Path, guard_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = EXAMPLES / "wrapped_runner_plugin"
    meta = tomllib.loads((folder / "pyproject.toml").read_text())
    monkeypatch.syspath_prepend(str(folder))
    plugin = __import__(meta["project"]["entry-points"]["guard"]["wrapped-runner"])
    files = {**PROJECT, "pyproject.toml": '[tool.guard]\nrunner = "wrapped"\n'}
    repo = make_repo(tmp_path / "proj", files)
    out = subprocess.run([sys.executable, "-m", "guard_adapters.cli", "ingest-coverage", str(repo)],
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stderr
    log = tmp_path / "wrapped.log"
    wrapper = tmp_path / "wrap.sh"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec "$@"\n')
    wrapper.chmod(0o755)
    (repo / "pkg/calc.py").write_text(PROJECT["pkg/calc.py"].replace("a + b", "a - b"))
    with Guard.open(repo, plugins=[plugin]) as guard:
        monkeypatch.delenv("GUARD_RUN_WRAPPER", raising=False)
        with pytest.raises(GuardError, match="needs a wrapper command"):
            guard.run(stream=False)
        monkeypatch.setenv("GUARD_RUN_WRAPPER", f"{wrapper} env WRAPPED=1")
        report = guard.run(stream=False)
    assert report.failed == ["tests/test_calc.py::test_add"]
    ran = log.read_text().split()
    assert ran[:2] == ["env", "WRAPPED=1"]
    assert "-m" in ran and "pytest" in ran and "tests/test_calc.py::test_add" in ran
    assert "tests/test_calc.py::test_neg" not in ran
