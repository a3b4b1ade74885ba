"""Evidence kept per commit on a shared TCP server: main's CI ingests two commits, a clone on a
branch checks against the nearest evidenced ancestor and names it, retention keeps what a check
just read, and a commit whose shards are still coming in is not read while a complete one is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from guard_adapters.falkordb.bases import BasedGraphStore
from guard_adapters.falkordb.store import connect
from guard_adapters.git.ancestry import commit_distances
from guard_adapters.git.repo import head_sha
from tests.conftest import git, make_repo

CALC = "".join(
    f"def {name}(x):\n    return x + {n}\n\n\n"
    for n, name in enumerate(("one", "two", "three"), start=1)
)
FILES = {
    "pkg/__init__.py": "",
    "pkg/calc.py": CALC,
    "tests/test_calc.py": "from pkg.calc import one, two, three\n\n\n"
    + "".join(
        f"def test_{name}():\n    assert {name}(1) == 1 + {n}\n\n\n"
        for n, name in enumerate(("one", "two", "three"), start=1)
    ),
    "tests/test_other.py": (
        "from pkg.calc import one\n\n\ndef test_more():\n    assert one(0) == 1\n"
    ),
}
T = "tests/test_calc.py::test_"


def _guard(url: str, graph: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "guard_adapters.cli", *args],
        env={**os.environ, "GUARD_FALKORDB_URL": url, "GUARD_GRAPH": graph, "GUARD_WORKER": "0",
             **env},
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return done


def _check(url: str, graph: str, repo: Path) -> dict[str, Any]:
    return dict(json.loads(_guard(url, graph, "check", "--repo", str(repo), "--json").stdout))


def _commit(repo: Path, path: str, old: str, new: str) -> str:
    file = repo / path
    file.write_text(file.read_text().replace(old, new))
    git(repo, "commit", "-qam", f"{path}: {new}")
    return head_sha(repo)


def _graphs(url: str, graph: str) -> set[str]:
    db = connect(url)
    try:
        return {str(g) for g in db.list_graphs() if str(g).startswith(graph)}
    finally:
        db.connection.close()


def _ingested(root: Path, url: str) -> tuple[str, Path, str]:
    """A fresh graph name, the sample project as a repository in ``root``, and its first
    commit, ingested into that graph."""
    graph, repo = f"team:{uuid.uuid4().hex[:8]}", make_repo(root, FILES)
    _guard(url, graph, "ingest-coverage", str(repo))
    return graph, repo, head_sha(repo)


def test_a_branch_clone_reads_its_nearest_evidenced_ancestor_and_names_it(
    tmp_path: Path, tcp_url: str
) -> None:
    graph, main, first = _ingested(tmp_path / "main", tcp_url)
    second = _commit(main, "pkg/calc.py", "return x + 2", "return x + 1 + 1")  # same behaviour
    _guard(tcp_url, graph, "ingest-coverage", str(main))
    assert _graphs(tcp_url, graph) == {f"{graph}@{first}", f"{graph}@{second}"}

    clone = tmp_path / "agent"
    git(tmp_path, "clone", "-q", str(main), str(clone))
    git(clone, "checkout", "-q", "-b", "feature", first)
    _commit(clone, "pkg/calc.py", "return x + 3", "return x + 2 + 1")
    decision = _check(tcp_url, graph, clone)
    assert decision["evidence_base"]["sha"] == first
    assert "nearest evidenced ancestor of HEAD (1 behind)" in decision["evidence_base"]["reason"]
    # read against the second commit, two()'s other body would select test_two too
    assert decision["level"] == "subset" and decision["tests"] == [f"{T}three"]
    human = _guard(tcp_url, graph, "check", "--repo", str(clone)).stdout
    assert f"evidence: the evidence of {first[:12]}" in human

    calc = main / "pkg/calc.py"
    calc.write_text(calc.read_text().replace("return x + 1\n", "return x + 1 + 0\n"))
    on_main = _check(tcp_url, graph, main)
    assert on_main["evidence_base"]["sha"] == second
    assert "the evidence of HEAD" in on_main["evidence_base"]["reason"]
    assert set(on_main["tests"]) == {f"{T}one", "tests/test_other.py::test_more"}
    git(main, "checkout", "-q", "--", ".")

    # main moves on with retention 2: the first base is past it, but the clone read it just now
    third = _commit(main, "pkg/calc.py", "return x + 1\n", "return 1 + x\n")
    _guard(tcp_url, graph, "ingest-coverage", str(main), GUARD_EVIDENCE_BASES="2")
    assert _graphs(tcp_url, graph) == {f"{graph}@{s}" for s in (first, second, third)}
    db = connect(tcp_url)
    try:
        store = BasedGraphStore(db, graph, keep=2, repo=main, lease_s=0.0,
                                distances=lambda b: commit_distances(main, b))  # fmt: skip
        assert store.prune_bases(protect=[third]) == [first]  # once its lease has run out
    finally:
        db.connection.close()
    assert _graphs(tcp_url, graph) == {f"{graph}@{second}", f"{graph}@{third}"}

    # without its ancestor, the clone reads the base sharing the most history, and still
    # selects what differs from it: the second commit's two() is not the branch's
    git(clone, "fetch", "-q", "origin")
    again = _check(tcp_url, graph, clone)
    assert again["evidence_base"]["sha"] == second
    assert "no evidenced ancestor" in again["evidence_base"]["reason"]
    assert {f"{T}two", f"{T}three"} <= set(again["tests"] or ())


def test_a_repaired_miss_stays_repaired_in_the_evidence_of_later_commits(
    tmp_path: Path, tcp_url: str
) -> None:
    graph, repo, _ = _ingested(tmp_path / "proj", tcp_url)
    other = "tests/test_other.py::test_more"
    _guard(tcp_url, graph, "feedback", "--repo", str(repo),
           "--function", "pkg/calc.py::three", "--test", other)  # fmt: skip
    _commit(repo, "pkg/calc.py", "return x + 2", "return x + 1 + 1")
    _guard(tcp_url, graph, "ingest-coverage", str(repo))  # a new base, a new graph
    calc = repo / "pkg/calc.py"
    calc.write_text(calc.read_text().replace("return x + 3", "return x + 2 + 1"))
    decision = _check(tcp_url, graph, repo)
    assert decision["evidence_base"]["sha"] == head_sha(repo)
    assert set(decision["tests"]) == {f"{T}three", other}


def test_a_base_a_pruning_gave_up_on_is_a_base_again_once_ingested(
    tmp_path: Path, tcp_url: str
) -> None:
    repo = make_repo(tmp_path / "proj", FILES)
    sha, graph = head_sha(repo), f"team:{uuid.uuid4().hex[:8]}"
    db = connect(tcp_url)
    try:
        store = BasedGraphStore(db, graph, keep=2, repo=repo,
                                distances=lambda b: commit_distances(repo, b))  # fmt: skip
        base = store.writer_for(sha)
        base.update_ingest_info(coverage_sha=sha, coverage_complete=True)
        base._query("MATCH (m:Meta) SET m.retiring = true")  # a pruning died after marking
        assert store.evidence_bases() == []
        store.writer_for(sha)  # the next ingest of that commit
        assert [b.sha for b in store.evidence_bases()] == [sha]
        base.clear()
    finally:
        db.connection.close()


def test_a_commit_whose_shards_are_not_all_in_is_passed_over_for_a_complete_one(
    tmp_path: Path, tcp_url: str
) -> None:
    graph, repo, complete = _ingested(tmp_path / "proj", tcp_url)
    partial = _commit(repo, "pkg/calc.py", "return x + 3", "return x + 2 + 1")
    _guard(tcp_url, graph, "ingest-coverage", str(repo), "--shard", "1/2")
    decision = _check(tcp_url, graph, repo)
    assert decision["evidence_base"]["sha"] == complete
    assert (
        f"{partial[:12]} is nearer but its ingest has not completed"
        in (decision["evidence_base"]["reason"])
    )
    assert decision["level"] == "subset" and decision["tests"] == [f"{T}three"]
    _guard(tcp_url, graph, "ingest-coverage", str(repo), "--shard", "2/2")
    now = _check(tcp_url, graph, repo)
    assert now["evidence_base"]["sha"] == partial and now["tests"] == []


def test_a_forked_base_is_no_base_until_its_refresh_says_so(tmp_path: Path, tcp_url: str) -> None:
    graph, repo, first = _ingested(tmp_path / "fork", tcp_url)
    tree = "f" * 40  # the snapshot commit a refresh would write
    db = connect(tcp_url)
    try:
        store = BasedGraphStore(db, graph, keep=4, repo=repo,
                                distances=lambda b: commit_distances(repo, b))  # fmt: skip
        copy = store.fork_base(first, tree)
        assert copy is not None
        assert _graphs(tcp_url, graph) == {f"{graph}@{first}", f"{graph}@{tree}"}
        assert copy.covering_tests(["pkg/calc.py::one"])  # the base's evidence came along
        # it still says it holds the first commit's evidence: no check may read it as the tree's
        assert [b.sha for b in store.evidence_bases()] == [first]
        assert store.fork_base(first, tree) is None  # another worktree forked it first
        assert store.fork_base("0" * 40, "e" * 40) is None  # no such base
        copy.update_ingest_info(coverage_sha=tree, coverage_complete=True)
        assert sorted(b.sha for b in store.evidence_bases()) == sorted([first, tree])
    finally:
        db.connection.close()
