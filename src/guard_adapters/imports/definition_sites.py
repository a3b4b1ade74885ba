"""Which of a file's definitions a function is, when its name alone does not tell (standard
library only: it runs inside the target's interpreter, for ``state_digest``)."""

from __future__ import annotations

import collections
import importlib.util
import os
import re
import types
import unicodedata


class DefinitionSites:
    """Whether a function's name alone does not tell which of its file's definitions it
    comes from (the branches of an ``if``): then its code does, apart from positions (an
    edit above moves every line)."""

    def __init__(self, sources: dict[str, bytes], root: str = "") -> None:
        self.sources = sources  # the text an import was served instead of the disk's
        self.root = root  # only its files change between two imports
        self.twice: dict[str, set[str] | None] = {}  # file -> names it defines twice or more
        self.texts: dict[str, bytes] = {}
        self.tables: dict[str, dict[str, list[types.CodeType]]] = {}

    def ambiguous(self, code: types.CodeType, qualname: str) -> bool:
        filename = code.co_filename
        twice = self._names_defined_twice(filename)
        if twice is None:
            return True
        if code.co_name not in twice:
            return False
        table = self.tables.get(filename)
        if table is None:
            table = self.tables[filename] = _definitions(self.texts[filename], filename)
        codes = table.get(qualname.replace(".<locals>", ""), [])
        # the one compiled from the same text compares equal (code, constants, positions);
        # none does for code compiled otherwise or named otherwise (3.10: a wrapper)
        return len(codes) > 1 or not any(c == code for c in codes)

    def _names_defined_twice(self, filename: str) -> set[str] | None:
        """None where the text cannot be read."""
        if filename in self.twice:
            return self.twice[filename]
        real = os.path.realpath(filename)
        found: set[str] | None = set()
        if real.startswith(self.root + os.sep):
            try:
                served = self.sources.get(real)
                data = self.texts[filename] = served if served is not None else _read(real)
                text = importlib.util.decode_source(data)
            except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
                found = None
            else:  # names as the compiler keeps them (NFKC)
                defined = re.findall(r"\bdef\s+(\w+)", text)
                names = collections.Counter(unicodedata.normalize("NFKC", n) for n in defined)
                found = {n for n, count in names.items() if count > 1}
                found |= {"<lambda>"} if text.count("lambda") > 1 else set()
        self.twice[filename] = found
        return found


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _definitions(text: bytes, filename: str) -> dict[str, list[types.CodeType]]:
    """Qualified name (without ``<locals>``) -> its code objects, in the order they are
    defined in the text."""
    out: dict[str, list[types.CodeType]] = {}
    try:
        top = compile(text, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return out
    todo = collections.deque([(top, "")])
    while todo:
        code, prefix = todo.popleft()
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                qualname = f"{prefix}.{const.co_name}" if prefix else const.co_name
                out.setdefault(qualname, []).append(const)
                todo.append((const, qualname))
    return out
