"""Rules for what code reads besides code: data files, folder listings, new modules that
shadow a name, doctests, and child processes whose code is not measured."""

from __future__ import annotations

from pathlib import PurePosixPath

from guard_core.model import FileKind, FileRole, Reason, RegionKind, split_id
from guard_core.rules.base import Rule, RuleInput
from guard_core.selection import Selection


def data_file_readers(data: RuleInput, selection: Selection) -> None:
    for path in data.data_files:
        selection.add_edges(data.evidence.get(path, ()), "reads-data-file")


def collected_files(data: RuleInput, selection: Selection) -> None:
    """A file pytest collects tests from that is no Python test module (a conftest's
    ``pytest_collect_file`` reads it: YAML cases, ``.txt`` doctests) runs whole when it
    changes, so the cases it gains run too; so does a new file of a kind such files are,
    under a folder they are in."""
    changed = [
        f for f in data.change.files if f.role is FileRole.DATA and f.kind is not FileKind.DELETED
    ]
    if not changed:
        return
    collected = {split_id(t)[0] for t in data.store.all_tests()} - {""}
    folders = {(p.suffix, p.parent) for p in map(PurePosixPath, collected) if p.suffix != ".py"}
    for f in changed:
        path = PurePosixPath(f.path)
        if f.path in collected:
            selection.add(f.path, Reason("collected-file", f"pytest collects tests from {f.path}"))
        elif path.suffix and any(
            suffix == path.suffix and (folder == path.parent or folder in path.parents)
            for suffix, folder in folders
        ):
            why = f"{f.path} is of a kind pytest collects tests from there"
            selection.add(f.path, Reason("collected-file", why))


def folder_listers(data: RuleInput, selection: Selection) -> None:
    for folder in data.listed:
        selection.add_edges(data.evidence.get(folder, ()), "lists-changed-folder")


def new_module_names(data: RuleInput, selection: Selection) -> None:
    """Code that names a module the change adds (it imported something else by that name)."""
    dependents = data.change.dependents
    if not dependents:
        return
    via = {d.id: d.via for d in dependents}
    for e in data.store.covering_tests(sorted(via), 0.0, lines=False):
        selection.add(e.test, Reason("names-new-module", via[e.function], e.confidence))


def doctests(data: RuleInput, selection: Selection) -> None:
    """Doctest items read values through their namespace, which no index sees: a changed
    module-level or class-body binding selects them all; a changed docstring, the doctests of
    its file (the docstring may be one). Calls they make are in evidence."""
    cs = data.change
    values = any(r.names and r.region is not RegionKind.FUNCTION for r in cs.regions)
    docs = {r.file for r in cs.regions if r.doc_changed}
    docs |= {
        f.path
        for f in cs.files
        if f.role is FileRole.SOURCE and f.kind in (FileKind.ADDED, FileKind.RENAMED)
    }
    if not values and not docs:
        return
    items = data.store.doctest_items()
    for test in items:
        if values or split_id(test)[0] in docs:
            selection.add(test, Reason("doctest", "doctests read names no index sees"))
    for path in sorted(docs) if items else ():  # doctests the graph has not seen yet
        selection.add(path, Reason("doctest", f"{path} may hold new doctests"))


def spawners(data: RuleInput, selection: Selection) -> None:
    cs = data.change
    if not (cs.regions or data.data_files or data.listed or cs.dependents):
        return  # a comment-only edit changes no code
    for test in data.store.spawning_tests():
        selection.add(
            test, Reason("spawns-python", "starts a Python child process whose code is unmeasured")
        )


FILE_RULES = (
    Rule("data-files", data_file_readers, refinement=False),
    Rule("listed-folders", folder_listers, refinement=False),
    Rule("collected-files", collected_files, refinement=False),
    Rule("new-module-names", new_module_names, refinement=False),
    Rule("doctests", doctests),
    Rule("spawners", spawners),
)
