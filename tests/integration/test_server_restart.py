"""A shared server that restarts in the middle of an ingest: the ingest fails with a clear
message, and the evidence of the commit before it is whole and still read after the restart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

from guard_adapters.falkordb.store import FalkorGraphStore, connect
from guard_adapters.git.repo import head_sha
from tests.conftest import git, make_repo
from tests.integration.tcp_server import free_port, start_server, stop_server, url_of

EVIDENCE = "MATCH (f)-[c:COVERED_BY]->(t) RETURN coalesce(f.id, f.path), t.id, c.lines"
FILES = {
    "pkg/__init__.py": "",
    "pkg/calc.py": "def one(x):\n    return x + 1\n\n\ndef two(x):\n    return x + 2\n",
    # slow enough that the server can go down while pytest runs
    "tests/test_calc.py": "import time\n\nfrom pkg.calc import one, two\n\n\n"
    + "".join(
        f"def test_{i}():\n    time.sleep(0.3)\n    assert one({i}) + two({i}) == {2 * i + 3}\n\n\n"
        for i in range(8)
    ),
}


def _env(url: str, graph: str) -> dict[str, str]:
    return {**os.environ, "GUARD_FALKORDB_URL": url, "GUARD_GRAPH": graph, "GUARD_WORKER": "0",
            "GUARD_STORE_TIMEOUT": "2"}  # fmt: skip


def _guard(url: str, graph: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "guard_adapters.cli", *args], env=_env(url, graph),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _evidence(url: str, name: str) -> list[list[object]]:
    store = FalkorGraphStore(connect(url), name)
    try:
        return sorted(store._read(EVIDENCE))
    finally:
        store.close()


def test_a_restart_mid_ingest_fails_it_clearly_and_the_previous_evidence_stays_whole(
    tmp_path: Path,
) -> None:
    port, data = free_port(), tmp_path / "data"
    data.mkdir()
    url, graph = url_of(port), f"restart:{uuid.uuid4().hex[:8]}"
    server = start_server(port, data, save="3600 1")  # it saves its snapshot when it stops
    try:
        repo = make_repo(tmp_path / "proj", FILES)
        before = head_sha(repo)
        first = _guard(url, graph, "ingest-coverage", str(repo))
        _, err = first.communicate(timeout=240)
        assert first.returncode == 0, err
        whole = _evidence(url, f"{graph}@{before}")
        assert len(whole) >= 16

        (repo / "pkg/calc.py").write_text(FILES["pkg/calc.py"].replace("x + 2", "2 + x"))
        git(repo, "commit", "-qam", "two")
        # the whole suite: a carried-over ingest of this one-line change ends before the stop
        ingest = _guard(url, graph, "ingest-coverage", str(repo), "--full")
        db = connect(url)
        deadline = time.monotonic() + 60
        while f"{graph}@{head_sha(repo)}" not in {str(g) for g in db.list_graphs()}:
            assert time.monotonic() < deadline and ingest.poll() is None, "the ingest never began"
            time.sleep(0.05)
        db.connection.close()
        stop_server(server)  # while its tests run: nothing of the new commit is complete yet
        _, err = ingest.communicate(timeout=240)
        server = start_server(port, data, save="3600 1")

        assert ingest.returncode not in (0, None)
        assert "Traceback" not in err and "FalkorDB is unreachable" in err, err
        assert _evidence(url, f"{graph}@{before}") == whole
        check = _guard(url, graph, "check", "--repo", str(repo), "--json")
        out, err = check.communicate(timeout=120)
        assert check.returncode == 0, err
        decision = json.loads(out)
        assert decision["evidence_base"]["sha"] == before  # the new commit's ingest is not whole
        assert decision["level"] == "subset" and len(decision["tests"]) == 8
    finally:
        stop_server(server)
