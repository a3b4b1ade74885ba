"""Ids a user or an agent types: `feedback`, `callers` and `covering-tests` refuse the ones the
graph does not hold (exit 2, a hint, no traceback) and never change the graph."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from guard_adapters.agents.mcp_server import GuardTools
from guard_core.api import Guard
from guard_core.errors import UnknownId
from tests.conftest import make_repo
from tests.e2e.test_cli import guard

FILES = {
    "pkg/__init__.py": "",
    "pkg/m.py": "def f(x):\n    return x + 1\n\n\ndef g(x):\n    return f(x)\n",
    "tests/test_m.py": "import pytest\nfrom pkg.m import f, g\n\n\ndef test_f():\n"
    "    assert f(1) == 2\n\n\n@pytest.mark.parametrize('x', [1, 2])\ndef test_g(x):\n"
    "    assert g(x) == x + 1\n",
}
INJECTIONS = [
    "pkg/m.py::f'\") MATCH (n) DETACH DELETE n //",
    "pkg/m.py::f}) MATCH (n) DETACH DELETE n //",
    "pkg\\m.py::f\\",
    "pkg/m.py::fü\u2019☃",
    "-pkg/m.py::f",
    "' OR 1=1 --",
]


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory, falkordb_url: str) -> Iterator[
    tuple[Path, dict[str, str]]
]:  # fmt: skip
    repo = make_repo(tmp_path_factory.mktemp("ids") / "r", FILES)
    env = {"GUARD_FALKORDB_URL": falkordb_url, "GUARD_GRAPH": f"test:ids-{uuid.uuid4().hex[:8]}"}
    out = guard("ingest-coverage", str(repo), "--json", env=env)
    assert out.returncode == 0, out.stderr
    yield repo, env
    guard("ingest-static", str(repo), "--reset", env=env)


def counts(repo: Path, env: dict[str, str]) -> dict[str, object]:
    out = guard("stats", "--json", "--repo", str(repo), env=env)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    data.pop("graph")
    return data


def refused(out: object, *, hint: str | None = None) -> None:
    assert out.returncode == 2, (out.stdout, out.stderr)  # type: ignore[attr-defined]
    assert "is not in the graph" in out.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in out.stderr + out.stdout  # type: ignore[attr-defined]
    if hint is not None:
        assert "hint:" in out.stderr and hint in out.stderr  # type: ignore[attr-defined]


def test_feedback_refuses_a_ghost_test_and_run_keeps_working(
    ingested: tuple[Path, dict[str, str]],
) -> None:
    repo, env = ingested
    before = counts(repo, env)
    out = guard("feedback", "--repo", str(repo), "--function", "pkg/m.py::f",
                "--test", "tests/test_nope.py::test_ghost", env=env)  # fmt: skip
    refused(out, hint="tests/test_m.py::test_")
    out = guard("feedback", "--repo", str(repo), "--function", "pkg/m.py::ff",
                "--test", "tests/test_m.py::test_f", env=env)  # fmt: skip
    refused(out, hint="'pkg/m.py::f'")
    assert counts(repo, env) == before

    (repo / "pkg/m.py").write_text(FILES["pkg/m.py"].replace("x + 1", "x + 2"))
    try:
        run = guard("run", "--repo", str(repo), "--no-refresh", env=env)
        assert run.returncode == 1, run.stdout + run.stderr  # the edit fails, nothing else
        assert "not found" not in run.stdout + run.stderr
    finally:
        (repo / "pkg/m.py").write_text(FILES["pkg/m.py"])


def test_feedback_takes_a_parametrised_id_as_its_test(
    ingested: tuple[Path, dict[str, str]],
) -> None:
    repo, env = ingested
    before = counts(repo, env)
    out = guard("feedback", "--repo", str(repo), "--function", "pkg/m.py::f",
                "--test", "tests/test_m.py::test_g[2]", env=env)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "recorded: tests/test_m.py::test_g now covers pkg/m.py::f" in out.stdout
    after = counts(repo, env)
    assert after["tests"] == before["tests"] and after["functions"] == before["functions"]


@pytest.mark.parametrize("command", ["callers", "covering-tests"])
def test_queries_with_unknown_and_injection_shaped_ids_change_nothing(
    ingested: tuple[Path, dict[str, str]], command: str
) -> None:
    repo, env = ingested
    before = counts(repo, env)
    for ident in ["pkg/m.py::nope", "pkg/nope.json", *INJECTIONS]:
        out = guard(command, "--repo", str(repo), "--json", "--", ident, env=env)
        refused(out)
        assert ident in out.stderr or repr(ident) in out.stderr
    known = guard(command, "--repo", str(repo), "--json", "pkg/m.py::f", env=env)
    assert known.returncode == 0 and json.loads(known.stdout), known.stderr
    assert counts(repo, env) == before


def test_the_api_and_the_mcp_tool_refuse_unknown_ids(
    ingested: tuple[Path, dict[str, str]], falkordb_url: str
) -> None:
    repo, env = ingested
    with Guard.open(repo, env=env) as g:
        before = g.store.stats()
        with pytest.raises(UnknownId, match="is not in the graph") as info:
            g.feedback("pkg/m.py::f", "tests/test_m.py::test_ghost")
        assert info.value.hint and "tests/test_m.py::test_" in info.value.hint
        tools = GuardTools(repo, lambda _repo: g)
        for call in (
            lambda: tools.feedback(INJECTIONS[0], "tests/test_m.py::test_f"),
            lambda: tools.callers(INJECTIONS[1]),
            lambda: tools.covering_tests(INJECTIONS[2]),
        ):
            with pytest.raises(UnknownId):
                call()
        assert g.store.stats() == before
        assert "tests/test_m.py::test_ghost" not in g.store.all_tests()
    assert os.path.exists(repo / "pkg/m.py")
