"""Fixtures shared by the end-to-end modules."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from guard_adapters.coverage.ingest import ingest_coverage
from guard_core.api import Guard
from tests.conftest import make_repo


@contextlib.contextmanager
def ingested_project(
    root: Path, files: Mapping[str, str], falkordb_url: str, label: str,
    environ: Mapping[str, str] | None = None, python: str | None = None,
) -> Iterator[Guard]:  # fmt: skip
    """A project of ``files`` made a git repository under ``root``, its coverage ingested into
    a fresh graph of the session's server (by ``python``'s pytest, with ``environ`` set while
    its tests run), and a Guard on it; the graph is cleared afterwards."""
    repo = make_repo(root / "proj", dict(files))
    env = {"GUARD_FALKORDB_URL": falkordb_url, "GUARD_GRAPH": f"test:{label}-{os.getpid()}"}
    with Guard.open(repo, env=env) as g:
        g.store.clear()
        g.store.ensure_schema()
        saved = {k: os.environ.get(k) for k in environ or {}}
        os.environ.update({k: v.format(repo=repo) for k, v in (environ or {}).items()})
        try:
            ingest_coverage(repo, g.store, python=python)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
        try:
            yield g
        finally:
            g.store.clear()


def guard_by_each_collector(label: str) -> Any:
    """A module's ``guard`` fixture (``guard = guard_by_each_collector("x")``): its ``FILES``
    as a project ingested by each collector, ``default`` (this interpreter: coverage.py
    before 3.12) and ``monitoring`` (a Python 3.12 venv: ``sys.monitoring``)."""

    @pytest.fixture(scope="module", params=["default", "monitoring"])
    def guard(request: pytest.FixtureRequest) -> Iterator[Guard]:
        monitoring = request.param == "monitoring"
        python = request.getfixturevalue("monitoring_python") if monitoring else None
        root = request.getfixturevalue("tmp_path_factory").mktemp(f"{label}-{request.param}")
        url = request.getfixturevalue("falkordb_url")
        name = f"{label}-{request.param}"
        with ingested_project(root, request.module.FILES, url, name, python=python) as g:
            yield g

    return guard


@pytest.fixture(scope="module")
def guard(request: pytest.FixtureRequest) -> Iterator[Guard]:
    """The module's ``FILES`` as an ingested project (a module with a project of another
    shape defines its own ``guard``)."""
    label = request.module.__name__.rpartition(".")[2]
    root = request.getfixturevalue("tmp_path_factory").mktemp(label)
    url = request.getfixturevalue("falkordb_url")
    with ingested_project(root, request.module.FILES, url, label) as g:
        yield g


@pytest.fixture
def tree(guard: Guard) -> Iterator[Path]:
    """The working tree of the module's ingested project (its ``guard`` fixture), put back
    as committed after the test."""
    repo = guard.settings.repo
    yield repo
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "--", "."], check=True)
    subprocess.run(["git", "-C", str(repo), "clean", "-qfd"], check=True)


@contextlib.contextmanager
def without_import_probe(guard: Guard) -> Iterator[Guard]:
    """A Guard on the same graph and working tree that charges import-time code to every test
    that imports it, as the evidence records it (no import probe)."""
    env = {
        "GUARD_FALKORDB_URL": str(guard.settings.falkordb_url),
        "GUARD_GRAPH": str(guard.settings.graph),
    }
    with Guard.open(guard.settings.repo, env=env, import_probe=False) as plain:
        yield plain


def edit(repo: Path, path: str, old: str, new: str) -> None:
    """Replace the first ``old`` in ``path`` of the working tree (which must hold it)."""
    file = repo / path
    text = file.read_text()
    assert old in text, old
    file.write_text(text.replace(old, new, 1))
