"""Where an object keeps state besides its instance dict: the fields of bases written in C, and
the slots of a class statement."""

from __future__ import annotations

import types
from typing import Any

_C_FIELDS: dict[type, list[tuple[str, Any]]] = {}


def fields_in_c(kind: type) -> list[tuple[str, Any]]:
    """The fields that bases of ``kind`` written in C define (their data descriptors, but
    ``object``'s; a class statement's ``__slots__`` are read as slots)."""
    found = _C_FIELDS.get(kind)
    if found is None:
        found = [
            (f"{base.__name__}.{name}", member)
            for base in kind.__mro__
            if base is not object and "__slots__" not in vars(base)
            for name, member in sorted(vars(base).items())
            if not name.startswith("__")
            and isinstance(member, (types.GetSetDescriptorType, types.MemberDescriptorType))
        ]
        _C_FIELDS[kind] = found
    return found


def slots_of(kind: type) -> list[str]:
    out: list[str] = []
    for klass in kind.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        out.extend([slots] if isinstance(slots, str) else slots)
    return [s for s in out if s not in ("__dict__", "__weakref__")]
