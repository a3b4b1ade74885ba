"""Fixtures shared by the end-to-end modules."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from guard_core.api import Guard


@pytest.fixture
def tree(guard: Guard) -> Iterator[Path]:
    """The working tree of the module's ingested project (its ``guard`` fixture), put back
    as committed after the test."""
    repo = guard.settings.repo
    yield repo
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "--", "."], check=True)
    subprocess.run(["git", "-C", str(repo), "clean", "-qfd"], check=True)
