"""Fixtures of the hostile-input suite: one sample repository ingested once per module into the
session's real FalkorDB, restored to its commit after every scenario."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from guard_adapters.coverage.ingest import ingest_coverage
from guard_core.api import Guard
from tests.hostile.harness import (
    SAMPLE,
    SUITE,
    Result,
    assert_decision_shape,
    assert_no_traceback,
    build_repo,
    git,
    graph_census,
    graph_counts,
    guard_env,
    reset_tree,
    run_guard,
    tree_changes,
    tree_state,
    unique_graph,
)


class Sample:
    """An ingested sample repository and the `guard` CLI pointed at its graph."""

    def __init__(self, repo: Path, url: str, graph: str, suite: Iterable[str]) -> None:
        self.repo = repo
        self.url = url
        self.graph = graph
        self.suite = tuple(suite)
        self.base = git(repo, "rev-parse", "HEAD").strip()
        self.git_config = (repo / ".git" / "config").read_bytes()
        self.env = guard_env(url, graph)
        self.counts: dict[str, Any] = {}

    def guard(
        self, *args: str, env: Mapping[str, str] | None = None, timeout: float = 120.0,
        cwd: Path | None = None, same_tree: bool = True,
    ) -> Result:  # fmt: skip
        """Run `guard ARGS`; the tree, the index and the stash must come out byte-identical."""
        before = tree_state(self.repo) if same_tree else None
        out = run_guard({**self.env, **(env or {})}, *args, cwd=cwd, timeout=timeout)
        if before is not None:
            changes = tree_changes(before, tree_state(self.repo))
            assert not changes, (
                f"guard {args[0]} changed the working tree, the index or the stash: "
                f"{changes[:5]}\n" + out.describe()
            )
        return out

    def check(
        self, *extra: str, env: Mapping[str, str] | None = None, timeout: float = 120.0,
        suite: Iterable[str] | None = None, repo: Path | str | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        """`guard check --json`: exit 0, one valid decision, graph counts unchanged."""
        out = self.guard(
            "check", "--repo", str(repo or self.repo), "--json", *extra, env=env, timeout=timeout
        )
        assert_no_traceback(out)
        assert out.returncode == 0, out.describe()
        decision = out.json()
        assert_decision_shape(decision, self.suite if suite is None else suite)
        return decision

    def run(
        self, *extra: str, env: Mapping[str, str] | None = None, timeout: float = 180.0,
        repo: Path | str | None = None, cwd: Path | None = None,
    ) -> Result:  # fmt: skip
        """`guard run`: what it reports must not be a false pass (checked by the caller)."""
        out = self.guard(
            "run", "--repo", str(repo or self.repo), *extra, env=env, timeout=timeout, cwd=cwd
        )
        assert_no_traceback(out, guard_frames_only=True)
        # a run records itself (Run, FAILED_IN): the read-only baseline moves with it
        self.counts = self.census()
        return out

    def assert_run_fails(
        self, env: Mapping[str, str] | None = None, repo: Path | str | None = None,
        cwd: Path | None = None,
    ) -> Result:  # fmt: skip
        out = self.run(env=env, repo=repo, cwd=cwd)
        assert out.returncode != 0, "false pass: guard run exit 0 on a failing edit\n" + (
            out.describe()
        )
        return out

    def census(self) -> dict[str, int]:
        return graph_census(self.url, self.graph)

    def assert_graph_unchanged(self) -> None:
        now = self.census()
        assert now == self.counts, f"a read-only command wrote: {now} != {self.counts}"

    def ingest(self) -> None:
        """(Re)write the sample's evidence from scratch: a fresh graph at the base commit."""
        env = {"GUARD_FALKORDB_URL": self.url, "GUARD_GRAPH": self.graph,
               "GUARD_EVIDENCE_BASES": "1"}  # fmt: skip
        with Guard.open(self.repo, env=env) as g:
            g.store.clear()
            g.store.ensure_schema()
            ingest_coverage(self.repo, g.store)
        stats = graph_counts(self.env, self.repo)  # `guard stats` reads what was written
        assert stats.get("tests"), stats
        self.counts = self.census()
        self.ingested_counts = dict(self.counts)
        self._graph_command("GRAPH.COPY", self.graph, self.backup, ignore_missing=False)

    @property
    def backup(self) -> str:
        return self.graph + ":backup"

    def _graph_command(self, *args: str, ignore_missing: bool = True) -> None:
        from falkordb import FalkorDB

        db = FalkorDB.from_url(self.url)
        try:
            if args[0] == "GRAPH.COPY":
                self._graph_command("GRAPH.DELETE", args[2])
            db.connection.execute_command(*args)
        except Exception as exc:  # a graph that is not there
            if not ignore_missing:
                raise
            assert "empty key" in str(exc) or "Invalid graph" in str(exc), exc
        finally:
            db.connection.close()

    def restore_graph(self) -> None:
        """A scenario that failed may have written (a ghost test): later scenarios must not
        inherit its damage, so the graph is put back as the ingest left it."""
        self._graph_command("GRAPH.COPY", self.backup, self.graph, ignore_missing=False)
        self.counts = self.ingested_counts

    def reset(self) -> None:
        (self.repo / ".git" / "config").write_bytes(self.git_config)
        reset_tree(self.repo, self.base)


@pytest.fixture(scope="module")
def sample_factory(tmp_path_factory: pytest.TempPathFactory, falkordb_url: str) -> Iterator[Any]:
    made: list[Sample] = []

    def make(
        label: str, files: Mapping[str, str | bytes] = SAMPLE, suite: Iterable[str] = SUITE,
        dirname: str = "sample",
    ) -> Sample:  # fmt: skip
        repo = build_repo(tmp_path_factory.mktemp(f"hostile-{label}") / dirname, files)
        sample = Sample(repo, falkordb_url, unique_graph(label), suite)
        sample.ingest()
        sample.reset()
        made.append(sample)
        return sample

    yield make
    for sample in made:
        with Guard.open(sample.repo, env=sample.env) as g:
            g.store.clear()
        sample._graph_command("GRAPH.DELETE", sample.backup)


@pytest.fixture(scope="module")
def shared(sample_factory: Any, request: pytest.FixtureRequest) -> Sample:
    """The module's sample, ingested once."""
    label = Path(str(request.module.__file__)).stem.removeprefix("test_")
    return sample_factory(label)


@pytest.fixture
def sample(shared: Sample) -> Iterator[Sample]:
    """The module's sample for one scenario, restored to its commit afterwards."""
    shared.reset()
    assert git(shared.repo, "status", "--porcelain") == ""
    yield shared
    shared.reset()


os.environ.setdefault("GUARD_WORKER", "0")
