"""The ``guard`` entry point: answer read-only commands through the repository's warm worker
when one runs, else run the command here (and start a worker for the next call).

A fresh process spends most of a ``guard check`` importing the graph client; the worker (see
:mod:`guard_adapters.worker`) keeps those imports loaded. Until it knows the worker cannot
answer, this module imports only what :mod:`guard_adapters.worker.client` does. The worker's
answer is exactly what the command prints and exits with here.
"""

from __future__ import annotations

import os
import signal
import sys

from guard_adapters.interrupts import interrupted
from guard_adapters.worker.client import FAST_COMMANDS, ask_worker, start_worker


def main() -> None:
    try:
        _main()
    except BaseException as exc:  # a Ctrl-C before the command's own handler is in place
        if not interrupted(exc) or isinstance(exc, SystemExit):
            raise
        sys.stderr.write("guard: interrupted\n")
        sys.exit(130)


def _main() -> None:
    argv = sys.argv[1:]
    fast = bool(argv) and argv[0] in {*FAST_COMMANDS, "run"}
    fast = fast and os.environ.get("GUARD_WORKER") != "0"
    if fast and argv[0] == "run":
        from guard_adapters.cli.fast_run import run_through_worker

        code = run_through_worker(argv)
        if code is not None:
            sys.exit(code)
    elif fast:
        answer = ask_worker(argv)
        if answer is not None:
            code, out, err = answer
            sys.stdout.write(out)
            sys.stderr.write(err)
            sys.stdout.flush()
            sys.exit(code)
    from guard_adapters.cli.main import main as run_here

    try:
        run_here()
    finally:
        # the command has answered: a Ctrl-C now would only kill the interpreter's exit
        # silently (no message, a failing status for work that was done)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if fast:
            start_worker(argv)
