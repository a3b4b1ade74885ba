"""Guard in an agent's loop: `guard init`, Claude Code's Stop hook and the MCP server, each
driven the way its host drives it (subprocesses, JSON on stdin, the MCP SDK's client)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.conftest import git, make_repo

PROJECT = {
    "pkg/__init__.py": "",
    "pkg/calc.py": "def add(a, b):\n    return a + b\n\n\ndef neg(a):\n    return -a\n",
    "pkg/api.py": (
        "from pkg.calc import add\n\n\ndef total(xs):\n    return sum(add(x, x) for x in xs)\n"
    ),
    "tests/test_calc.py": (
        "from pkg.calc import add, neg\n\n\n"
        "def test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_neg():\n    assert neg(2) == -2\n"
    ),
    "tests/test_api.py": (
        "from pkg.api import total\n\n\ndef test_total():\n    assert total([1, 2]) == 6\n"
    ),
}
SCHEMA = Path(__file__).resolve().parents[2] / "src/guard_adapters/schemas/decision-1.schema.json"


def guard(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "guard_adapters.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=180,
    )


def snapshot(repo: Path) -> dict[str, bytes]:
    names = (".gitignore", ".claude/settings.json", "AGENTS.md", ".cursor/rules/guard.mdc")
    return {n: (repo / n).read_bytes() for n in names if (repo / n).exists()}


def fresh_project(root: Path) -> Path:
    return make_repo(
        root,
        {
            **PROJECT,
            ".claude/settings.json": json.dumps(
                {
                    "model": "opus",
                    "hooks": {
                        "PreToolUse": [
                            {"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}]}
                        ],
                        "Stop": [{"hooks": [{"type": "command", "command": "notify-me"}]}],
                    },
                }
            ),
            "AGENTS.md": "# House rules\n\nUse tabs.\n",
        },
    )


@pytest.fixture
def project(tmp_path: Path, guard_env: str) -> Path:
    """A repository set up by `guard init --agent all`, the integration files committed."""
    repo = fresh_project(tmp_path / "proj")
    assert guard("init", "--repo", str(repo), "--agent", "all").returncode == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "guard init")
    out = guard("init", "--repo", str(repo))  # HEAD moved: the evidence follows it
    assert out.returncode == 0 and "ingested 3 tests" in out.stdout, out.stdout + out.stderr
    return repo


def test_init_keeps_what_was_there_and_is_idempotent(tmp_path: Path, guard_env: str) -> None:
    project = fresh_project(tmp_path / "proj")
    first = guard("init", "--repo", str(project), "--agent", "all")
    assert first.returncode == 0, first.stderr
    assert "ingested 3 tests" in first.stdout
    settings = json.loads((project / ".claude/settings.json").read_text())
    assert settings["model"] == "opus"
    assert settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == "lint"
    stop = [h["command"] for g in settings["hooks"]["Stop"] for h in g["hooks"]]
    assert stop[0] == "notify-me" and stop[1].endswith("guard hook claude-stop")
    agents_md = (project / "AGENTS.md").read_text()
    assert agents_md.startswith("# House rules\n\nUse tabs.\n") and "guard run" in agents_md
    assert "alwaysApply: true" in (project / ".cursor/rules/guard.mdc").read_text()
    assert ".guard/" in (project / ".gitignore").read_text().splitlines()
    before = snapshot(project)
    again = guard("init", "--repo", str(project), "--agent", "all")
    assert again.returncode == 0, again.stderr
    assert snapshot(project) == before
    assert "done:" not in again.stdout and "evidence is current" in again.stdout


def test_init_installs_the_integrations_even_when_the_ingest_fails(
    tmp_path: Path, guard_env: str
) -> None:
    project = fresh_project(tmp_path / "broken")
    (project / "tests" / "conftest.py").write_text("raise RuntimeError('no database here')\n")
    out = guard("init", "--repo", str(project), "--agent", "claude")
    assert out.returncode == 2
    assert "failed: ingest:" in out.stderr and "no database here" in out.stderr
    assert "Traceback" not in out.stderr.split("failed: ingest:")[0]
    stop = json.loads((project / ".claude/settings.json").read_text())["hooks"]["Stop"]
    assert any(h["command"].endswith("guard hook claude-stop") for g in stop for h in g["hooks"])
    check = guard("check", "--repo", str(project), "--json")
    assert json.loads(check.stdout)["level"] == "run-all"  # no evidence yet: the whole suite


def stop(repo: Path, active: bool, session: str = "s1") -> dict[str, Any]:
    payload = {
        "session_id": session,
        "cwd": str(repo),
        "hook_event_name": "Stop",
        "stop_hook_active": active,
        "transcript_path": "/dev/null",
    }
    out = guard("hook", "claude-stop", stdin=json.dumps(payload))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout) if out.stdout.strip() else {}


def test_stop_hook_blocks_a_breaking_edit_once_per_tree(project: Path) -> None:
    assert stop(project, active=False) == {}  # nothing changed: the agent may stop
    calc = project / "pkg/calc.py"
    calc.write_text(calc.read_text().replace("a + b", "a - b"))
    first = stop(project, active=False)
    assert first["decision"] == "block"
    assert "tests/test_calc.py::test_add" in first["reason"]
    assert "tests/test_api.py::test_total" in first["reason"]  # through pkg.api.total
    assert "test_neg" not in first["reason"]
    # the agent stops again without touching the tree: let it through, tell the human
    again = stop(project, active=True)
    assert "decision" not in again and "still fail" in again["systemMessage"]
    # a different, still broken tree is checked and blocked again
    calc.write_text(calc.read_text().replace("a - b", "a * b"))
    assert stop(project, active=True)["decision"] == "block"
    calc.write_text(PROJECT["pkg/calc.py"].replace("return -a", "return 0 - a"))  # harmless
    assert stop(project, active=True) == {}


def test_stop_hook_flags_tests_weakened_to_pass(project: Path) -> None:
    calc = project / "pkg/calc.py"
    calc.write_text(calc.read_text().replace("a + b", "a - b"))
    tests = project / "tests/test_calc.py"
    tests.write_text(
        tests.read_text().replace(
            "def test_add():\n    assert add(2, 3) == 5",
            "import pytest\n\n\n@pytest.mark.skip\ndef test_add():\n    assert True",
        )
    )
    (project / "tests/test_api.py").unlink()
    reply = stop(project, active=False)
    assert "decision" not in reply  # the suite passes now ...
    message = reply["systemMessage"]  # ... but a human is told how
    assert "skip-added" in message and "assertions-weakened" in message
    assert "tests-removed" in message and "test_total" in message


def test_stop_hook_survives_hostile_input(tmp_path: Path) -> None:
    out = guard("hook", "claude-stop", stdin="{not json")
    assert (
        out.returncode == 0 and "unreadable hook input" in json.loads(out.stdout)["systemMessage"]
    )
    out = guard("hook", "claude-stop", stdin=json.dumps({"cwd": str(tmp_path / "nowhere")}))
    assert out.returncode == 0 and "not checked" in json.loads(out.stdout)["systemMessage"]


def test_mcp_client_calls_check_over_stdio(project: Path) -> None:
    pytest.importorskip("mcp")
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    calc = project / "pkg/calc.py"
    calc.write_text(calc.read_text().replace("return -a", "return a"))

    async def session() -> tuple[set[str], dict[str, Any], dict[str, Any]]:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "guard_adapters.cli", "mcp", "--repo", str(project)],
            env=dict(os.environ),
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            names = {t.name for t in (await client.list_tools()).tools}
            check = await client.call_tool("check", {})
            covering = await client.call_tool("covering_tests", {"function_id": "pkg/calc.py::add"})
            return names, _payload(check), _payload(covering)

    names, decision, covering = asyncio.run(session())
    assert names >= {"check", "run", "covering_tests", "callers", "feedback"}
    jsonschema.validate(decision, json.loads(SCHEMA.read_text()))
    assert decision["tests"] == ["tests/test_calc.py::test_neg"]
    assert {t["test"] for t in covering["tests"]} == {
        "tests/test_calc.py::test_add",
        "tests/test_api.py::test_total",
    }


def _payload(result: Any) -> dict[str, Any]:
    """A tool result's JSON object (attribute names differ between SDK 1.x and 2.x)."""
    error = getattr(result, "is_error", getattr(result, "isError", False))
    assert not error, result.content
    structured = getattr(result, "structured_content", getattr(result, "structuredContent", None))
    if structured is None:
        return dict(json.loads(result.content[0].text))
    return dict(structured)


def test_stop_hook_says_so_when_the_run_exceeds_its_budget(project: Path) -> None:
    calc = project / "pkg/calc.py"
    calc.write_text(calc.read_text().replace("a + b", "a - b"))
    payload = {"session_id": "s2", "cwd": str(project), "stop_hook_active": False}
    out = guard("hook", "claude-stop", "--budget", "0.01", stdin=json.dumps(payload))
    reply = json.loads(out.stdout)
    assert reply["decision"] == "block" and "did not finish within" in reply["reason"]
