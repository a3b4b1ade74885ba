"""What running code at import time may do: calls and decorators known to only compute, and
the test for a call that may do more (register, mutate, raise)."""

from __future__ import annotations

import ast

from guard_adapters.python.syntax import last_name

PURE_CALLS = frozenset(
    {
        "bool",
        "bytes",
        "cast",
        "compile",
        "defaultdict",
        "dict",
        "field",
        "float",
        "frozenset",
        "getLogger",
        "int",
        "list",
        "namedtuple",
        "NamedTuple",
        "NewType",
        "object",
        "OrderedDict",
        "ParamSpec",
        "set",
        "str",
        "tuple",
        "TypeVar",
        "TypeVarTuple",
        "TypedDict",
        "Path",
        "PurePath",
        "escape",
        "partial",
        "itemgetter",
        "attrgetter",
    }
)
"""Callables whose call at import time only builds a value (no registration, no I/O)."""


PURE_DECORATORS = frozenset(
    {
        "abstractmethod",
        "abstractproperty",
        "asynccontextmanager",
        "cache",
        "cached_property",
        "classmethod",
        "contextmanager",
        "deleter",
        "final",
        "getter",
        "lru_cache",
        "no_type_check",
        "overload",
        "override",
        "property",
        "runtime_checkable",
        "setter",
        "staticmethod",
        "total_ordering",
        "wraps",
        "dataclass",
        "unique",
        "deprecated",
    }
)
"""Decorators that wrap or mark a function without registering it anywhere."""


def has_impure_call(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call) and last_name(n.func) not in PURE_CALLS for n in ast.walk(node)
    )
