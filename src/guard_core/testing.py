"""Small in-memory fakes of the ports, for unit tests and for plugin authors' own tests.

:class:`FakeStore` answers as the FalkorDB store does: one contract suite
(``tests/integration/test_store_contract.py``) runs against both."""

from __future__ import annotations

from pathlib import Path

import attrs

from guard_core.fake_store import FakeStore, FileNode
from guard_core.model import MODULE_SCOPE, ChangeSet

MODULE = f"::{MODULE_SCOPE}"


@attrs.define
class FakeSlicer:
    """Returns a fixed change set (or raises ``fail``)."""

    change_set: ChangeSet
    fail: Exception | None = None

    def slice(self, repo: Path, base: str | None = None) -> ChangeSet:
        if self.fail is not None:
            raise self.fail
        return attrs.evolve(self.change_set, base=base or self.change_set.base)


__all__ = ["FakeSlicer", "FakeStore", "FileNode"]
