"""The frozen edits of ``evals/split.json``: each is a unified diff against a target's sdist."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import attrs

from evals.targets import git

SPLIT = Path(__file__).resolve().parent / "split.json"

KINDS = (
    "negate-condition",
    "flip-comparison",
    "change-constant",
    "return-none",
    "drop-statement",
    "module-constant",
    "hierarchy-method",
    "new-helper",
    "data-file",
    "multi-file",
    "test-file",
    "harmless",
    "rename",
    "signature",
    "decorator",
)


@attrs.frozen
class Edit:
    id: str
    target: str
    kind: str
    split: str  # "dev" or "held-out"
    description: str
    diff: str
    files: tuple[str, ...]


def load_split(path: Path = SPLIT) -> list[Edit]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [Edit(**{**e, "files": tuple(e["files"])}) for e in data["edits"]]


def save_split(edits: list[Edit], seed: int, path: Path = SPLIT) -> None:
    payload = {"seed": seed, "edits": [attrs.asdict(e) for e in edits]}
    path.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")


def apply(repo: Path, edit: Edit) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "apply", "--whitespace=nowarn", "-"],
        input=edit.diff.encode(),
        check=True,
        capture_output=True,
    )


def revert(repo: Path) -> None:
    """Back to the committed sdist, keeping Guard's and testmon's state."""
    git(repo, "checkout", "-q", "--", ".")
    git(repo, "clean", "-qfd", "-e", ".guard", "-e", ".testmondata*")
