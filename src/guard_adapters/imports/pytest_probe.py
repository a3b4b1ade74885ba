"""The import probe as a pytest plug-in (``-p guard_adapters.imports.pytest_probe`` with
``--collect-only``): the repository is imported as the tests' session imports it — the
``conftest.py`` files, plug-ins, environment variables and collection order pytest has — and
what that built is digested once collection is done. ``GUARD_PROBE_REQUEST`` names the
request, ``GUARD_PROBE_OUT`` the result file."""

from __future__ import annotations

import json
import os
import random
import sys

import pytest

from guard_adapters.imports.replay import Replay

# read and dropped at import, before any conftest.py imports the repository: the run's own
# file names are no state of the repository's
_REQUEST = os.environ.pop("GUARD_PROBE_REQUEST", None)
_OUT = os.environ.pop("GUARD_PROBE_OUT", "")
_replay: Replay | None = None
if _REQUEST:
    # every import starts from one random state: one the repository's import seeds or draws
    # from otherwise then differs, where the OS's seed would differ from any import to the next
    random.seed(0)
    with open(_REQUEST, encoding="utf-8") as f:
        _replay = Replay(json.load(f))
    _replay.start()


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    if _replay is None:
        return
    result = _replay.finish()
    with open(_OUT, "w", encoding="utf-8") as f:
        json.dump(result, f)
    # the answer is written: what pytest does after collection (its summary, other plug-ins'
    # hooks, the import's exit handlers and threads) only costs time, up to seconds
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
