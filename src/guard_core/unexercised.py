"""Which changed ids a complete, fresh ingest proves no test ran in-process: no edges is
evidence of absence only where the code could have been measured. Child processes are no
proof either way; the tests that start them are selected apart."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import PurePosixPath

from guard_core.model import split_id
from guard_core.ports import FunctionFacts
from guard_core.selection import module_region


def package_init(path: str) -> str | None:
    """The ``__init__.py`` of the package holding ``path`` (its parent's, for a package's own
    ``__init__.py``); None at the repository root."""
    p = PurePosixPath(path)
    folder = p.parent.parent if p.name == "__init__.py" else p.parent
    return None if str(folder) == "." else str(folder / "__init__.py")


def ids_to_ask(judged: Collection[str]) -> set[str]:
    """The facts :func:`unexercised` reads: each changed id's module and its package's."""
    modules = {module_region(split_id(f)[0]) for f in judged}
    inits = {package_init(split_id(m)[0]) for m in modules}
    return modules | {module_region(i) for i in inits if i}


def unexercised(
    judged: Collection[str], known: Mapping[str, FunctionFacts], complete: bool
) -> set[str]:
    """The changed ids without evidence whose module was imported under measurement (the
    ingest saw them not run), or whose module no test imported though its package was imported
    from the repository under measurement (so the repository's file is what an import finds,
    and nothing imported it). A module imported before measuring began has evidence (all of
    it is charged to every test); one without a package, or whose package nothing imported
    from here (an installed copy, a script) proves nothing."""
    if not complete:
        return set()

    def measured(module: str) -> bool:
        return module in known and not known[module].no_evidence

    def never_imported(module: str) -> bool:
        init = package_init(split_id(module)[0])
        return module in known and init is not None and measured(module_region(init))

    out = set()
    for f in judged:
        if f not in known or not known[f].no_evidence:
            continue
        module = module_region(split_id(f)[0])
        if measured(module) or never_imported(module):
            out.add(f)
    return out
