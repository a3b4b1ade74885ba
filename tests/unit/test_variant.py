"""The harness's variants: no setting switches a refinement off, and the seed's variant sees a
changed test module as a file, not as regions."""

from __future__ import annotations

from pathlib import Path

import pytest

from guard_core.config import load_settings
from guard_core.errors import ConfigError
from guard_core.model import ChangedFile, ChangedRegion, ChangeKind, ChangeSet, FileKind, FileRole
from guard_core.variant import DEFAULT, Variant


def test_the_seed_variant_sees_only_source_regions() -> None:
    files = (
        ChangedFile("pkg/m.py", FileKind.MODIFIED, FileRole.SOURCE),
        ChangedFile("tests/test_m.py", FileKind.MODIFIED, FileRole.TEST),
        ChangedFile("tests/conftest.py", FileKind.MODIFIED, FileRole.CONFTEST),
    )
    regions = tuple(
        ChangedRegion(id=f"{f.path}::f", file=f.path, kind=ChangeKind.MODIFIED) for f in files
    )
    change = ChangeSet(base="b", files=files, regions=regions)
    assert DEFAULT.sliced(change) == change
    seen = Variant(seed_policy=True).sliced(change)
    assert [r.file for r in seen.regions] == ["pkg/m.py"]
    assert seen.files == files  # the test files are still changed files: they run everything


@pytest.mark.parametrize("key", ["seed_policy", "use_confidence", "widening", "line_evidence"])
def test_no_setting_switches_a_refinement_off(tmp_path: Path, key: str) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.guard]\n{key} = false\n")
    with pytest.raises(ConfigError, match=f"unknown key '{key}'"):
        load_settings(tmp_path, {})
    with pytest.raises(ConfigError, match="unknown setting"):
        load_settings(tmp_path / "elsewhere", {}, **{key: False})
