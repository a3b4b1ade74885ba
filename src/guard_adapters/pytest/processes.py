"""What the collector's audit hook needs to know about the processes a test starts: which
events start one, which may run Python code of the repository, and how a child is handed the
token that measures it."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

AUDITED = frozenset({"open", "os.listdir", "os.scandir", "glob.glob"})


SPAWNS = frozenset(
    {
        "subprocess.Popen",
        "os.fork",
        "os.forkpty",
        "os.posix_spawn",
        "os.spawn",
        "os.exec",
        "os.system",
    }
)


# spawns that start a program with an environment Guard can hand a token to (position of the
# environment in the audit arguments; None: the process's own)
EXEC_ENV = {"subprocess.Popen": 3, "os.posix_spawn": 2, "os.exec": 2, "os.spawn": 3}


CHILD_SITE = str(Path(__file__).resolve().parent / "child_site")


IDLE_WATCHDOG = "guard_adapters.falkordb.idle"


EXECNET_BOOTSTRAP = "import sys;exec(eval(sys.stdin.readline()))"  # execnet's popen gateway


LAUNCHERS = frozenset(
    {
        "sh",
        "bash",
        "dash",
        "zsh",
        "env",
        "nohup",
        "xargs",
        "make",
        "tox",
        "nox",
        "uv",
        "pipx",
        "pdm",
        "poetry",
        "hatch",
    }
)


def runs_python(event: str, args: tuple[Any, ...]) -> bool:
    """Whether a process-creation event may run Python code of the repository: a fork, or a
    program that is an interpreter, lives beside it (console scripts) or starts with a Python
    shebang. ``os.system`` runs a shell line: counted, it cannot be told apart."""
    if event in ("os.fork", "os.forkpty", "os.system"):
        return True
    try:
        return names_python(args)
    except Exception:  # an audit hook must never fail the test; unknown counts as Python
        return True


def names_python(args: tuple[Any, ...]) -> bool:
    argv = args[1] if len(args) > 1 else None
    program = args[0]
    if isinstance(argv, str):
        argv = argv.split()
    if isinstance(argv, list | tuple) and IDLE_WATCHDOG in argv:
        return False  # Guard's own server watchdog, started when a check starts the server
    if program is None and isinstance(argv, list | tuple) and argv:
        program = argv[0]
    if not isinstance(program, str | bytes | os.PathLike):
        return True
    name = os.fsdecode(program)
    if "python" in os.path.basename(name):
        return True
    words = (
        [os.fsdecode(a) for a in argv if isinstance(a, str | bytes)]
        if isinstance(argv, list | tuple)
        else []
    )
    if os.path.basename(name) in LAUNCHERS or any("python" in w for w in words):
        return True  # a shell line, `env python3`, `bash run.sh`: may well start Python
    found = name if os.sep in name else (shutil.which(name) or "")
    if not found:
        return False
    if os.path.dirname(os.path.realpath(found)) == os.path.dirname(
        os.path.realpath(sys.executable)
    ) or os.path.dirname(found) == os.path.dirname(sys.executable):
        return True
    try:
        with open(found, "rb") as script:
            return b"python" in script.readline(200)
    except OSError:
        return False
