"""Code a test runs in a child Python process (``python -m pkg.cli``) is measured and charged
to that test, so a change elsewhere no longer selects it; a child Guard cannot measure (an
isolated interpreter, ``-I``) leaves its test selected for every change, as before."""

from __future__ import annotations

from pathlib import Path

from guard_core.api import Guard
from tests.e2e.conftest import edit, guard_by_each_collector

FILES = {
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    "pkg/__init__.py": "",
    "pkg/core.py": (
        "def shout(s):\n    return s.upper()\n\n\ndef whisper(s):\n    return s.lower()\n"
    ),
    "pkg/cli.py": (
        "import sys\n\nfrom pkg.core import shout\n\nSUFFIX = ''\n\n\n"
        "def main():\n    print(shout(sys.argv[1]) + SUFFIX)\n\n\n"
        "if __name__ == '__main__':\n    main()\n"
    ),
    "pkg/_windows.py": "ERROR_NOT_ENOUGH_MEMORY = 8\n\n\ndef code():\n    return 8\n",
    "tests/__init__.py": "",
    "tests/test_source.py": (
        "import pathlib\n\n\ndef test_reads_source():\n"
        "    text = pathlib.Path('pkg/_windows.py').read_text()\n    assert '= 8' in text\n"
    ),
    "tests/test_cli.py": (
        "import subprocess\nimport sys\n\n\n"
        "def test_cli():\n"
        "    out = subprocess.run([sys.executable, '-m', 'pkg.cli', 'hi'],\n"
        "                         capture_output=True, text=True, check=True).stdout\n"
        "    assert out == 'HI\\n'\n\n\n"
        "def test_isolated():\n"
        "    subprocess.run([sys.executable, '-I', '-c', 'print(1)'], check=True)\n"
    ),
    "tests/test_core.py": (
        "from pkg.core import whisper\n\n\ndef test_whisper():\n    assert whisper('A') == 'a'\n"
    ),
}
CLI, ISOLATED = "tests/test_cli.py::test_cli", "tests/test_cli.py::test_isolated"
WHISPER = "tests/test_core.py::test_whisper"
READS_SOURCE = "tests/test_source.py::test_reads_source"


guard = guard_by_each_collector("child")


def test_a_change_the_child_ran_selects_the_test_that_started_it(guard: Guard, tree: Path) -> None:
    edit(tree, "pkg/core.py", "return s.upper()", "return s.title()")
    d = guard.check()
    assert CLI in d.tests
    assert WHISPER not in d.tests
    assert list(guard.run(stream=False).failed) == [CLI]


def test_a_change_no_measured_child_ran_leaves_its_test_out(guard: Guard, tree: Path) -> None:
    edit(tree, "pkg/core.py", "return s.lower()", "return s.casefold()")
    d = guard.check()
    assert WHISPER in d.tests
    assert CLI not in d.tests
    assert ISOLATED in d.tests  # its child ran unmeasured: any change may reach it


def test_a_module_no_test_imported_but_a_test_reads_as_text_selects_that_test(
    guard: Guard, tree: Path
) -> None:
    """``pkg._windows`` is imported by nothing, yet a test reads it as text (the ingest
    records no ``.py`` read): no edges there prove nothing."""
    edit(tree, "pkg/_windows.py", "= 8", "= 9")
    d = guard.check()
    assert READS_SOURCE in d.tests, d.overrides
    assert READS_SOURCE in guard.run(stream=False).failed


def test_a_module_imported_only_in_a_measured_child_selects_its_test(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/cli.py", "SUFFIX = ''", "SUFFIX = '!'")
    d = guard.check()
    assert CLI in d.tests
    assert list(guard.run(stream=False).failed) == [CLI]
