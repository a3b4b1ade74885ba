"""Git config the user (or anything they ran) wrote, in the repository and globally, never
changes what Guard reads: the change set and the evidence snapshot are those of a clean
config, for paths with spaces, quotes, unicode and a leading dash."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from guard_adapters.git.snapshot import working_tree_id
from tests.conftest import git, make_repo
from tests.e2e.test_cli import guard

NAMES = ["pkg/with space.py", 'pkg/quo"te.py', "pkg/ünï/cödé.py", "-dash.py", "pkg/tab\there.py"]
HOSTILE = """
[color]
    ui = always
    diff = always
    status = always
[core]
    quotePath = true
    autocrlf = true
    safecrlf = true
    attributesFile = {attributes}
[diff]
    noprefix = true
    mnemonicPrefix = true
    relative = true
    renames = copies
    renameLimit = 1
    external = {external}
    orderFile = {order}
    ignoreSubmodules = all
[diff "hostile"]
    textconv = {external}
    binary = true
[status]
    showUntrackedFiles = no
    renames = false
[add]
    ignoreErrors = true
"""


def body(n: int) -> str:
    return "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(n))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    files = {name: body(3) for name in NAMES}
    files.update({"pkg/__init__.py": "", "pkg/moved.py": body(40), "pkg/gone.py": body(2),
                  "pkg/crlf.py": body(2)})  # fmt: skip
    root = make_repo(tmp_path / "r y", files)
    for name in NAMES:  # modified, unstaged and staged
        (root / name).write_text(body(3).replace("x + 1", "x - 1"))
    git(root, "add", "--", NAMES[0])
    git(root, "mv", "pkg/moved.py", "pkg/renamed now.py")
    (root / "pkg/gone.py").unlink()
    (root / "pkg/crlf.py").write_bytes(body(2).replace("\n", "\r\n").encode())
    for name in ("new dir/sub/ñew.py", "new dir/-lead.py", "top'q.py"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(body(1))
    return root


def make_hostile(root: Path, tmp_path: Path) -> dict[str, str]:
    """Hostile settings in .git/config, a global config, attribute files and git's variables."""
    external = tmp_path / "ext.sh"
    external.write_text("#!/bin/sh\necho 'diff --git x/garbage y/garbage'\nexit 0\n")
    external.chmod(0o755)
    order = tmp_path / "order"
    order.write_text("pkg/*\n*\n")
    attributes = tmp_path / "attributes"
    attributes.write_text("* diff=hostile text eol=crlf\n")
    (root / ".git/info").mkdir(exist_ok=True)
    (root / ".git/info/attributes").write_text("* diff=hostile\n")
    config = HOSTILE.format(external=external, order=order, attributes=attributes)
    with (root / ".git/config").open("a") as f:
        f.write(config)
    global_config = tmp_path / "global.gitconfig"
    global_config.write_text(config)
    return {
        "GIT_CONFIG_GLOBAL": str(global_config),
        "GIT_EXTERNAL_DIFF": str(external),
        "GIT_DIFF_OPTS": "--unified=0",
        "GIT_LITERAL_PATHSPECS": "1",
        "GIT_ICASE_PATHSPECS": "1",
        "GIT_CONFIG_PARAMETERS": "'diff.noprefix'='true' 'core.quotepath'='true'",
        "GIT_PAGER": "cat",
    }


def changes(root: Path, env: dict[str, str]) -> dict[str, object]:
    out = guard("changes", "--repo", str(root), "--json", env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def index_and_tree(root: Path) -> tuple[bytes, str]:
    return (root / ".git/index").read_bytes(), git(root, "status", "--porcelain=v1", "-z", "-uall")


def test_the_change_set_is_that_of_a_clean_config(repo: Path, tmp_path: Path) -> None:
    clean_env = {"GIT_CONFIG_GLOBAL": os.devnull}
    clean = changes(repo, clean_env)
    paths = {f["path"]: f for f in clean["files"]}  # type: ignore[attr-defined]
    assert set(NAMES) <= set(paths)
    assert paths["pkg/renamed now.py"]["old_path"] == "pkg/moved.py"
    assert paths["pkg/gone.py"]["kind"] == "deleted"
    assert {"new dir/sub/ñew.py", "new dir/-lead.py", "top'q.py", "pkg/crlf.py"} <= set(paths)

    env = make_hostile(repo, tmp_path)
    before = index_and_tree(repo)
    hostile = changes(repo, env)
    assert hostile == clean
    assert changes(repo / "pkg", env) == clean  # diff.relative does not apply from a subfolder
    assert index_and_tree(repo) == before


def test_the_evidence_snapshot_is_that_of_a_clean_config(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    clean = working_tree_id(repo)
    for key, value in make_hostile(repo, tmp_path).items():
        monkeypatch.setenv(key, value)
    before = index_and_tree(repo)
    assert working_tree_id(repo) == clean
    assert index_and_tree(repo) == before
