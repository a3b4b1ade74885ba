"""The import probe against real imports: a git repository made in a temp dir, its modules
imported by this interpreter as the base commit had them and as the working tree has them."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from guard_adapters.imports.probe import SubprocessImportProbe
from guard_core.model import ChangedFile, ChangeSet, FileKind, FileRole
from tests.conftest import git, make_repo

FILES = {
    "pkg/__init__.py": "from pkg.conf import LIMIT\n",
    "pkg/conf.py": (
        "LIMIT = 3\nDOUBLE = LIMIT * 2\n\n\n"
        "def clamp(x, top=LIMIT):\n    return min(x, top)\n\n\n"
        "class Box:\n    SIZE = 1\n\n    def __init__(self, v):\n"
        "        self.v = v if v >= 0 else 0\n\n    def get(self):\n        return self.v\n\n\n"
        "default_box = Box(2)\n"
    ),
    "pkg/registry.py": (
        "COMMANDS = {}\n\n\n"
        "def command(fn):\n    COMMANDS[fn.__name__] = fn.__doc__\n    return fn\n"
    ),
    "pkg/cmds.py": (
        "import atexit\nimport collections.abc\nimport mimetypes\nimport os\n\n"
        "from pkg.registry import command\n\n\n"
        '@command\ndef greet():\n    """Say hello."""\n    return "hello"\n\n\n'
        "class Items:\n    pass\n\n\n"
        "os.environ.setdefault('GUARD_PROBE_TEST', 'a')\n"
        "mimetypes.add_type('text/x-guard', '.guard')\n"
    ),
    "tests/test_conf.py": "def test_nothing():\n    pass\n",
    "data.json": "{}\n",
}
WAITING_THREAD = "threading.Thread(target=threading.Event().wait, daemon=True).start()"
MODULES = ["pkg/__init__.py", "pkg/conf.py", "pkg/registry.py", "pkg/cmds.py"]


PROBES: dict[Path, SubprocessImportProbe] = {}  # the shared repository's


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SubprocessImportProbe]:
    """One repository and one probe for the module: the probe keeps the base's import, so a
    test's check starts the working tree's import only (tests that count imports start their
    own probe)."""
    repo = make_repo(tmp_path_factory.mktemp("probe") / "r", FILES)
    PROBES[repo] = SubprocessImportProbe(repo, sys.executable)
    return repo, PROBES[repo]


@pytest.fixture
def repo(shared: tuple[Path, SubprocessImportProbe]) -> Iterator[Path]:
    """The shared repository, put back as first committed after the test."""
    repo = shared[0]
    initial = git(repo, "rev-list", "--max-parents=0", "HEAD").strip()
    yield repo
    git(repo, "reset", "-q", "--hard", initial)
    git(repo, "clean", "-qfdx")


def compare(  # type: ignore[no-untyped-def]
    repo: Path, *paths: str, kind: FileKind = FileKind.MODIFIED, alone: bool = False
):
    """The shared probe's answer for the working tree (``alone``: a probe of its own, one
    that has learnt nothing from earlier tests)."""
    base = git(repo, "rev-parse", "HEAD").strip()
    files = tuple(ChangedFile(p, kind, FileRole.SOURCE) for p in paths)
    probe = SubprocessImportProbe(repo, sys.executable) if alone else PROBES[repo]
    return probe.compare(ChangeSet(base, files), MODULES)


def edit(repo: Path, path: str, old: str, new: str) -> None:
    file = repo / path
    text = file.read_text()
    assert old in text
    file.write_text(text.replace(old, new, 1))


def test_a_constant_changes_what_was_computed_from_it_at_import(repo: Path) -> None:
    edit(repo, "pkg/conf.py", "LIMIT = 3", "LIMIT = 4")
    state = compare(repo, "pkg/conf.py")
    assert state.changed is not None, state.detail
    assert {"pkg.conf.LIMIT", "pkg.conf.DOUBLE", "pkg.conf.clamp", "pkg.LIMIT"} <= state.changed
    assert "pkg.conf.Box.SIZE" not in state.changed


def test_a_body_no_import_runs_changes_nothing(repo: Path) -> None:
    edit(repo, "pkg/conf.py", "return self.v", "return self.v + 1")
    edit(repo, "pkg/conf.py", "if v >= 0 else 0", "if v > 0 else 0")  # Box(2) is built alike
    assert compare(repo, "pkg/conf.py").changed == frozenset()


def test_a_class_attribute_is_changed_as_that_member(repo: Path) -> None:
    edit(repo, "pkg/conf.py", "SIZE = 1", "SIZE = 2")
    state = compare(repo, "pkg/conf.py")
    assert state.changed is not None
    assert "pkg.conf.Box" not in state.changed
    # an instance held at import holds the class: its members are read by their names
    assert "pkg.conf.default_box" not in state.changed


HOLDERS = """import collections
import datetime


class Box:
    SIZE = 1
    TIMEOUT = datetime.timedelta(seconds=10)
    __match_args__ = ("size",)

    def __eq__(self, other, strict=False):
        return self is other


class Open(collections.UserDict):
    SIZE = 1


class Holder:
    box_class = Box
    open_class = Open

    def make(self, kind: Box = None):
        return kind


box, opened = Box(), Open()
"""


@pytest.mark.parametrize(
    "edits, changed",
    [
        (
            [("SIZE = 1", "SIZE = 2"), ("    SIZE = 1", "    SIZE = 2")],
            {"Box.SIZE", "Open.SIZE", "Holder.open_class", "opened"},
        ),
        ([("strict=False", "strict=True")], {"Box.__eq__"}),  # read by the calls that run it
        (  # computed at import: a holder's reader may read it by a name no index sees
            [("seconds=10", "seconds=30")],
            {"Box.TIMEOUT", "Holder.box_class", "Holder.make", "box"},
        ),
        (  # Python reads it of every instance, running no code of the class's
            [('("size",)', '("n",)')],
            {"Box.__match_args__", "Holder.box_class", "Holder.make", "box"},
        ),
    ],
    ids=["members", "a-method-python-calls", "computed-member", "data-python-reads"],
)
def test_a_held_class_is_compared_where_it_is_bound_unless_outside_code_may_read_it(
    tmp_path: Path, edits: list[tuple[str, str]], changed: set[str]
) -> None:
    """A closed class held as a value (a class attribute, an annotation, an instance's type)
    is the same class: its changed member is reported where the class is bound. A class with
    a base from elsewhere, whose code may read its members by any name, is compared whole."""
    files = {"pkg/__init__.py": "", "pkg/conf.py": HOLDERS, "tests/test_x.py": "import pkg.conf\n"}
    repo = make_repo(tmp_path / "r", files)
    for old, new in edits:
        edit(repo, "pkg/conf.py", old, new)
    base = git(repo, "rev-parse", "HEAD").strip()
    change = ChangeSet(base, (ChangedFile("pkg/conf.py", FileKind.MODIFIED, FileRole.SOURCE),))
    state = SubprocessImportProbe(repo, sys.executable).compare(change, ["pkg/conf.py"])
    assert state.changed == {f"pkg.conf.{name}" for name in changed}


def test_an_instance_built_otherwise_at_import_is_changed(repo: Path) -> None:
    edit(repo, "pkg/conf.py", "default_box = Box(2)", "default_box = Box(-2)")
    state = compare(repo, "pkg/conf.py")
    assert state.changed == {"pkg.conf.default_box"}


def test_a_docstring_copied_by_a_registering_decorator_changes_the_table(repo: Path) -> None:
    edit(repo, "pkg/cmds.py", "Say hello.", "Say hi.")
    state = compare(repo, "pkg/cmds.py")
    assert state.changed is not None
    assert "pkg.registry.COMMANDS" in state.changed


@pytest.mark.parametrize(
    "old, new",
    [
        ("return fn\n", "raise RuntimeError('no')\n"),  # importing pkg.cmds now fails
        ("'GUARD_PROBE_TEST', 'a'", "'GUARD_PROBE_TEST', 'b'"),
        ("'.guard'", "'.guarded'"),
        ("import os\n", "import os\natexit.register(print)\n"),
        ("    pass\n", "    pass\n\n\ncollections.abc.Sequence.register(Items)\n"),
        ("import os\n", "import os\nimport wave\n"),
        ("import os\n", "import os\n\nimport pytest\n\npytest.register_assert_rewrite('pkg')\n"),
        ("import os\n", f"import os\nimport threading\n\n{WAITING_THREAD}\n"),
        ("import os\n", "import os\n\n__import__('socket').setdefaulttimeout(7)\n"),
    ],
    ids=[
        "import-fails",
        "environ",
        "stdlib-table",
        "atexit",
        "abc-register",
        "new-import",
        "assert-rewrite",
        "thread",
        "socket-timeout",
    ],
)
def test_what_an_import_does_outside_the_repository_is_not_compared(
    repo: Path, old: str, new: str
) -> None:
    path = "pkg/registry.py" if old == "return fn\n" else "pkg/cmds.py"
    edit(repo, path, old, new)
    state = compare(repo, path)
    assert state.changed is None
    assert state.detail


def test_a_changed_file_an_import_may_read_is_not_compared(repo: Path) -> None:
    (repo / "data.json").write_text('{"a": 1}\n')
    assert compare(repo, "data.json").changed is None


def test_an_added_module_is_not_compared(repo: Path) -> None:
    (repo / "pkg/new.py").write_text("X = 1\n")
    assert compare(repo, "pkg/new.py", kind=FileKind.ADDED).changed is None


def test_a_repository_that_imports_from_elsewhere_is_not_compared(tmp_path: Path) -> None:
    """A module name that resolves outside the repository (an installed copy) is no replay of
    the repository's code (here pytest itself imports it first, and breaks)."""
    repo = make_repo(tmp_path / "r", {"json/__init__.py": "X = 1\n"})
    # the stdlib's ``json`` is imported first, from outside the repository
    edit(repo, "json/__init__.py", "X = 1", "X = 2")
    base = git(repo, "rev-parse", "HEAD").strip()
    files = (ChangedFile("json/__init__.py", FileKind.MODIFIED, FileRole.SOURCE),)
    probe = SubprocessImportProbe(repo, sys.executable)
    state = probe.compare(ChangeSet(base, files), ["json/__init__.py"])
    assert state.changed is None  # the repository's json shadows the standard library's
    assert state.detail


def test_one_probe_answers_each_edit_of_the_same_file_for_itself(repo: Path) -> None:
    """The base's import is kept between checks; the working tree's is not."""
    base = git(repo, "rev-parse", "HEAD").strip()
    change = ChangeSet(base, (ChangedFile("pkg/conf.py", FileKind.MODIFIED, FileRole.SOURCE),))
    probe = SubprocessImportProbe(repo, sys.executable)
    edit(repo, "pkg/conf.py", "LIMIT = 3", "LIMIT = 4")
    first = probe.compare(change, MODULES).changed
    assert first is not None and "pkg.conf.LIMIT" in first
    edit(repo, "pkg/conf.py", "LIMIT = 4", "LIMIT = 3")
    edit(repo, "pkg/conf.py", "SIZE = 1", "SIZE = 2")
    second = probe.compare(change, MODULES).changed
    assert second is not None
    assert "pkg.conf.Box.SIZE" in second and "pkg.conf.LIMIT" not in second


def counting_imports(probe: SubprocessImportProbe) -> list[str]:
    """The names of the imports ``probe`` starts from now on (``new-0``, ``old-1``, ...)."""
    started: list[str] = []
    start = probe._start

    def counted(tmp, project, name, *rest):  # type: ignore[no-untyped-def]
        started.append(name.rpartition("-")[0])
        return start(tmp, project, name, *rest)

    probe._start = counted  # type: ignore[method-assign]
    return started


def modified(repo: Path, *paths: str) -> ChangeSet:
    base = git(repo, "rev-parse", "HEAD").strip()
    return ChangeSet(base, tuple(ChangedFile(p, FileKind.MODIFIED, FileRole.SOURCE) for p in paths))


def test_a_check_of_other_files_reuses_the_import_of_the_base(repo: Path) -> None:
    """Whichever files changed, the base's import reads every file as the base has it: a
    later check starts only the working tree's import, and still tells its own change."""
    probe = SubprocessImportProbe(repo, sys.executable)
    started = counting_imports(probe)
    edit(repo, "pkg/conf.py", "LIMIT = 3", "LIMIT = 4")
    first = probe.compare(modified(repo, "pkg/conf.py"), MODULES).changed
    assert first is not None and "pkg.conf.LIMIT" in first
    assert started.count("old") == 1
    edit(repo, "pkg/conf.py", "LIMIT = 4", "LIMIT = 3")
    edit(repo, "pkg/registry.py", "COMMANDS = {}", "COMMANDS = {'x': None}")
    second = probe.compare(modified(repo, "pkg/registry.py"), MODULES).changed
    assert second is not None and "pkg.registry.COMMANDS" in second
    assert "pkg.conf.LIMIT" not in second
    # one import a side, then one: pytest's own session (its addresses, times, threads
    # idents) is no noise that would take a second import of each side
    assert sorted(started) == ["new", "new", "old"]


def test_a_file_left_out_of_the_diff_gets_its_own_import_of_the_base(repo: Path) -> None:
    """A module on disk that differs from what an earlier check's base import read (a diff
    that missed it) is no longer the same base: imported anew, never reused."""
    probe = SubprocessImportProbe(repo, sys.executable)
    started = counting_imports(probe)
    edit(repo, "pkg/conf.py", "LIMIT = 3", "LIMIT = 4")
    assert probe.compare(modified(repo, "pkg/conf.py"), MODULES).changed
    edit(repo, "pkg/conf.py", "LIMIT = 4", "LIMIT = 3")
    edit(repo, "pkg/registry.py", "COMMANDS = {}", "COMMANDS = {'x': None}")
    edit(repo, "pkg/cmds.py", "class Items:", "class Things:\n    pass\n\n\nclass Items:")
    assert probe.compare(modified(repo, "pkg/cmds.py"), MODULES).changed is not None
    assert started.count("old") == 2


@pytest.mark.parametrize(
    "saved, old, new, seen, base_imports",
    [
        ("pkg/registry.py", "COMMANDS = {}", "COMMANDS = {'x': None}", "pkg.registry.COMMANDS", 2),
        ("pkg/conf.py", "SIZE = 1", "SIZE = 2", "pkg.conf.Box.SIZE", 1),
    ],
    ids=["another-module", "the-changed-file"],
)
def test_a_file_saved_while_imported_leaves_that_check_unknown_and_nothing_kept(
    repo: Path, saved: str, old: str, new: str, seen: str, base_imports: int
) -> None:
    """A save between the check's reading of the files and the imports' (an agent's next
    write, a formatter): what was imported is neither the base nor the tree the check read,
    so that check knows nothing, and no later check reuses it."""
    probe = SubprocessImportProbe(repo, sys.executable)
    started = counting_imports(probe)
    run_all = probe._run_all

    def saving_first(*args):  # type: ignore[no-untyped-def]
        if not started:
            edit(repo, saved, old, new)
        return run_all(*args)

    probe._run_all = saving_first  # type: ignore[method-assign]
    edit(repo, "pkg/conf.py", "LIMIT = 3", "LIMIT = 4")
    assert probe.compare(modified(repo, "pkg/conf.py"), MODULES).changed is None
    paths = sorted({"pkg/conf.py", saved})
    later = probe.compare(modified(repo, *paths), MODULES)
    assert later.changed is not None and {seen, "pkg.conf.LIMIT"} <= later.changed
    assert started.count("old") == base_imports


def test_a_seed_the_import_no_longer_sets_is_a_difference_not_noise(repo: Path) -> None:
    """Two imports of the same code draw alike (the probe seeds one state): the state a seed
    left out gives is no noise that would hide the change from the tests relying on it."""
    edit(repo, "pkg/cmds.py", "class Items:", "import random\n\nrandom.seed(7)\n\n\nclass Items:")
    git(repo, "commit", "-qam", "a seed at import")
    edit(repo, "pkg/cmds.py", "random.seed(7)\n", "")
    assert compare(repo, "pkg/cmds.py").changed is None


STAMP = "import time\n\nos.environ['GUARD_PROBE_STAMP'] = str(time.perf_counter_ns())\n\n\n"


def test_what_varies_between_two_imports_of_each_side_is_learnt_once_per_base(repo: Path) -> None:
    """A start time written into a dependency's state differs from one import to the next:
    not the change. Learnt from a second import of both sides, the base's kept for later
    checks."""
    edit(repo, "pkg/cmds.py", "class Items:", STAMP + "class Items:")
    git(repo, "commit", "-qam", "a start time at import")
    probe = SubprocessImportProbe(repo, sys.executable)
    started = counting_imports(probe)
    edit(repo, "pkg/conf.py", "LIMIT = 3", "LIMIT = 4")
    first = probe.compare(modified(repo, "pkg/conf.py"), MODULES)
    assert first.changed is not None and "pkg.conf.LIMIT" in first.changed, first.detail
    edit(repo, "pkg/conf.py", "LIMIT = 4", "LIMIT = 3")
    edit(repo, "pkg/conf.py", "SIZE = 1", "SIZE = 2")
    second = probe.compare(modified(repo, "pkg/conf.py"), MODULES)
    assert second.changed is not None and "pkg.conf.Box.SIZE" in second.changed
    assert sorted(started) == sorted(["new", "old", "again", "old-again", "new", "again"])


@pytest.mark.parametrize("committed", [False, True], ids=["added", "removed"])
def test_a_varying_write_the_edit_adds_or_removes_is_a_difference(
    repo: Path, committed: bool
) -> None:
    """What varies on one side only is what the edit did: no noise hides it."""
    edit(repo, "pkg/cmds.py", "class Items:", STAMP + "class Items:")
    if committed:
        git(repo, "commit", "-qam", "a start time at import")
        edit(repo, "pkg/cmds.py", STAMP, "")
    assert compare(repo, "pkg/cmds.py", alone=True).changed is None  # teaching no shared noise


def test_a_later_process_reuses_the_base_import_kept_on_disk_in_one_environment(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each ``guard check`` is a process of its own: the base's import kept in a folder
    serves the next one, which still tells its own change, until a package is installed
    into a folder on the interpreter's path."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.setenv("PYTHONPATH", str(site))
    kept = tmp_path / "kept"
    checks = []
    for limit, installs in ((4, False), (5, False), (6, True)):
        edit(repo, "pkg/conf.py", f"LIMIT = {limit - 1}", f"LIMIT = {limit}")  # its own change
        if installs:
            (site / "newdep.py").write_text("X = 1\n")
        probe = SubprocessImportProbe(repo, sys.executable, kept=kept)
        started = counting_imports(probe)
        state = probe.compare(modified(repo, "pkg/conf.py"), MODULES)
        assert state.changed is not None and "pkg.conf.LIMIT" in state.changed
        checks.append(sorted(started))
    assert checks == [["new", "old"], ["new"], ["new", "old"]]


BY_PATH = "os.path.join(os.path.dirname(__file__), 'settings.py')"


@pytest.mark.parametrize(
    "load",
    [
        f"LIMIT = runpy.run_path({BY_PATH})['LIMIT']",
        f"spec = importlib.util.spec_from_file_location('pkg_settings', {BY_PATH})\n"
        "mod = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(mod)\nLIMIT = mod.LIMIT",
        f"ns = {{}}\nwith open({BY_PATH}) as f:\n"
        f"    exec(compile(f.read(), {BY_PATH}, 'exec'), ns)\nLIMIT = ns['LIMIT']",
        f"with open({BY_PATH}) as f:\n    LIMIT = int(f.read().split('=')[1])",
        "LIMIT = int(subprocess.check_output([sys.executable, '-c', "
        f"'import runpy, sys; print(runpy.run_path(sys.argv[1])[\"LIMIT\"])', {BY_PATH}]))",
    ],
    ids=["run-path", "spec-from-file", "exec-compile", "read-as-text", "child-process"],
)
def test_a_changed_module_run_or_read_by_path_is_not_compared(tmp_path: Path, load: str) -> None:
    """The base's text is served to the import system only: a module run or read by its path
    reads the working tree's text on both sides, so the two imports would agree."""
    files = {
        "pkg/__init__.py": (
            "import importlib.util\nimport os\nimport runpy\nimport subprocess\nimport sys\n\n"
            f"{load}\n"
        ),
        "pkg/settings.py": "LIMIT = 3\n",
        "tests/test_pkg.py": "import pkg\n\n\ndef test_limit():\n    assert pkg.LIMIT == 3\n",
    }
    repo = make_repo(tmp_path / "r", files)
    edit(repo, "pkg/settings.py", "LIMIT = 3", "LIMIT = 4")
    base = git(repo, "rev-parse", "HEAD").strip()
    change = ChangeSet(base, (ChangedFile("pkg/settings.py", FileKind.MODIFIED, FileRole.SOURCE),))
    probe = SubprocessImportProbe(repo, sys.executable)
    state = probe.compare(change, ["pkg/__init__.py", "pkg/settings.py"])
    assert state.changed is None or "pkg.LIMIT" in state.changed, state.detail


def test_a_changed_module_imported_by_name_is_still_compared(tmp_path: Path) -> None:
    """A doctest finder or pytest reading the served file for line numbers reads no state."""
    files = {
        "pkg/__init__.py": "from pkg.settings import LIMIT\n",
        "pkg/settings.py": '"""\n>>> LIMIT\n3\n"""\nLIMIT = 3\n',
        "tests/test_pkg.py": "import pkg\n\n\ndef test_limit():\n    assert pkg.LIMIT == 3\n",
    }
    repo = make_repo(tmp_path / "r", files)
    edit(repo, "pkg/settings.py", "LIMIT = 3", "LIMIT = 4")
    base = git(repo, "rev-parse", "HEAD").strip()
    change = ChangeSet(base, (ChangedFile("pkg/settings.py", FileKind.MODIFIED, FileRole.SOURCE),))
    probe = SubprocessImportProbe(repo, sys.executable, ("--doctest-modules", "pkg"))
    state = probe.compare(change, ["pkg/__init__.py", "pkg/settings.py"])
    assert state.changed is not None, state.detail
    assert "pkg.LIMIT" in state.changed
