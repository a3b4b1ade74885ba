"""The state an import left behind, digested (standard library only: it runs inside the
target's interpreter, for ``replay``): every repository module's globals name by name, every
other module's as ``module:name``, and the process's settings that no module's globals show
(exit and signal handlers, the decimal context, the socket module's default timeout, ...).
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import signal
import sys
import types
from collections.abc import Callable
from typing import Any

from guard_adapters.imports.state_digest import (
    _OWN,
    MODULE_DUNDERS,
    PURE_CACHES,
    Digest,
    _kind,
)


def digest_state(root: str, sources: dict[str, bytes] | None = None) -> dict[str, Any]:
    """The state of every loaded module: the repository's name by name, the others' as
    ``module:name``, and the process's (``sources``: the files' text the import was served)."""
    inside: dict[str, types.ModuleType] = {}
    outside: dict[str, types.ModuleType] = {}
    for name, loaded in sorted(sys.modules.items()):
        if not isinstance(loaded, types.ModuleType) or name.partition(".")[0] == _OWN:
            continue
        file = getattr(loaded, "__file__", None)
        real = os.path.realpath(file) if isinstance(file, str) else ""
        if real.startswith(root + os.sep):
            inside[name] = loaded
        else:
            outside[name] = loaded
    digest = Digest(set(inside), sources, root)
    state = {name: module_state(digest, m) for name, m in inside.items()}
    digest.strict = False  # a dependency's C objects: compared as far as they show
    external = {
        f"{name}:{k}": digest.global_of(name, k, v)
        for name, module in outside.items()
        for k, v in list(vars(module).items())
        if k not in MODULE_DUNDERS and (name, k) not in PURE_CACHES
    }
    return {
        "state": state,
        "outside": sorted(outside),
        "external": external,
        "process": process_state(digest),
        "unreadable": sorted(set(digest.unreadable)),
    }


def module_state(digest: Digest, module: types.ModuleType) -> dict[str, str]:
    """A digest per global name; a repository class also one per member (``C.attr``) and one
    of its frame (``C.<frame>``), so that a changed member is told apart from the class."""
    out = {}
    for key, value in sorted(vars(module).items()):
        if key in MODULE_DUNDERS:
            continue
        if isinstance(value, type) and value.__module__ in digest.repo_modules:
            members = digest.members(value)
            out[key] = digest.whole(value, members)
            out[f"{key}.<frame>"] = digest.frame(value)
            out |= {f"{key}.{k}": d for k, d in members}
        else:
            out[key] = digest.of(value)
    return out


def process_state(digest: Digest) -> dict[str, str]:
    """What an import may change that no module's globals show."""
    handlers = {}
    for sig in sorted(signal.valid_signals()):
        try:
            handlers[int(sig)] = digest.of(signal.getsignal(sig))
        except (ValueError, OSError):
            continue
    decimal = sys.modules.get("decimal")
    socket, locale = sys.modules.get("socket"), sys.modules.get("locale")
    faulthandler = sys.modules.get("faulthandler")
    umask = os.umask(0o022)
    os.umask(umask)
    return {
        "decimal": repr(decimal.getcontext()) if decimal is not None else "",
        "socket timeout": _read(lambda: socket and socket.getdefaulttimeout()),
        "locale": _read(lambda: locale and locale.setlocale(locale.LC_ALL)),
        "umask": oct(umask),
        "int digits": _read(getattr(sys, "get_int_max_str_digits", lambda: None)),
        "faulthandler": _read(lambda: faulthandler and faulthandler.is_enabled()),
        "atexit": str(atexit._ncallbacks()),
        "signals": json.dumps(handlers, sort_keys=True),
        "recursionlimit": str(sys.getrecursionlimit()),
        "switchinterval": str(sys.getswitchinterval()),
        "gc": f"{gc.isenabled()} {gc.get_threshold()}",
        "cwd": os.getcwd(),
        "threads": str(len(__import__("threading").enumerate())),
    }


def _read(query: Callable[[], object]) -> str:
    """A process setting as its getter returns it (a module not loaded: ``None``)."""
    try:
        return repr(query())
    except Exception as exc:
        return f"raised {_kind(exc)}"
