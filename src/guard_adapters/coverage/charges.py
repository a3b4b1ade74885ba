"""Charging what a context consumed: the lines of every cache fill and segment it read,
through fills read inside fills.

``consumed`` is a graph (context -> labels it read) of some ten thousand labels and a million
edges on a large suite, and most tests reach thousands of labels. Walking it per test and
merging line sets per label costs minutes, so the walk runs once over the graph's strongly
connected components (reachability as an int bit set per component), and each label's lines
are one frozenset of ints (a key's index shifted left, plus the line), which a union merges at
C speed.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping

Executed = dict[str, set[int]]  # region id or data-file path -> lines

_LINE_BITS = 32  # a line is (key index << 32) | line


def charge_consumed(
    by_context: defaultdict[str, Executed],
    consumed: Mapping[str, Iterable[str]],
    spawned: set[str],
    charged_only: tuple[str, ...],
    own: str = "<own>",
) -> None:
    """Adds to each context's lines those of every label it reaches in ``consumed``; a
    context that reaches a label in ``spawned`` joins it. Labels starting with one of
    ``charged_only`` are charged to others, not charged themselves. ``<own>CTX`` stands for
    the lines CTX ran itself, not what it reaches, and for what ``consumed`` gives it (the
    fills the collector saw lines of in CTX's stead)."""
    index: dict[str, int] = {}
    names: list[str] = []
    children: list[list[int]] = []

    def node(label: str) -> int:
        found = index.get(label)
        if found is None:
            found = index[label] = len(names)
            names.append(label)
            children.append([])
        return found

    for ctx, labels in consumed.items():
        me = node(ctx)
        children[me].extend(node(label) for label in labels)
    reach = _reachability(children)
    spawned_bits = sum(1 << index[label] for label in spawned if label in index)
    keys: dict[str, int] = {}
    key_names: list[str] = []
    encoded: dict[int, frozenset[int]] = {}
    interned: dict[frozenset[int], frozenset[int]] = {}

    def lines_of(i: int) -> frozenset[int]:
        found = encoded.get(i)
        if found is None:
            name = names[i]
            out: list[int] = []
            for key, ran in by_context.get(name.removeprefix(own), {}).items():
                k = keys.get(key)
                if k is None:
                    k = keys[key] = len(key_names)
                    key_names.append(key)
                base = k << _LINE_BITS
                out.extend(base | line for line in ran)
            codes = frozenset(out)
            # many fills run the very same lines (one memoised function, other arguments):
            # one object for them all, so that a union takes each once
            found = encoded[i] = interned.setdefault(codes, codes)
        return found

    for i, name in enumerate(names):  # before any context is charged: its own lines only
        if name.startswith(own):
            lines_of(i)
    for ctx in list(consumed):
        if ctx.startswith(charged_only):
            continue
        me = index[ctx]
        bits = reach[me] & ~(1 << me)
        if not bits:
            continue
        if bits & spawned_bits:
            spawned.add(ctx)
        distinct = {id(lines): lines for lines in map(lines_of, _members(bits))}
        union = frozenset().union(*distinct.values())
        mine = by_context[ctx]
        grouped: defaultdict[int, list[int]] = defaultdict(list)
        mask = (1 << _LINE_BITS) - 1
        for code in union:
            grouped[code >> _LINE_BITS].append(code & mask)
        for k, lines in grouped.items():
            mine.setdefault(key_names[k], set()).update(lines)


_ONE = re.compile("1")


def _members(bits: int) -> list[int]:
    """The indices of the set bits."""
    text = format(bits, "b")[::-1]
    return [m.start() for m in _ONE.finditer(text)]


def _reachability(children: list[list[int]]) -> list[int]:
    """Per node, the bit set of the nodes it reaches (itself included), through Tarjan's
    strongly connected components (iterative: the graph may be deep)."""
    n = len(children)
    order = [0] * n
    low = [0] * n
    on_stack = [False] * n
    seen = [False] * n
    component = [-1] * n
    stack: list[int] = []
    components: list[list[int]] = []  # in reverse topological order: callees first
    counter = 0
    for root in range(n):
        if seen[root]:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                seen[v] = True
                order[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack[v] = True
            recursed = False
            kids = children[v]
            while i < len(kids):
                w = kids[i]
                i += 1
                if not seen[w]:
                    work.append((v, i))
                    work.append((w, 0))
                    recursed = True
                    break
                if on_stack[w]:
                    low[v] = min(low[v], order[w])
            if recursed:
                continue
            if low[v] == order[v]:
                members = []
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    component[w] = len(components)
                    members.append(w)
                    if w == v:
                        break
                components.append(members)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    reach_of_component: list[int] = []
    for c, members in enumerate(components):
        bits = 0
        for v in members:
            bits |= 1 << v
        for v in members:
            for w in children[v]:
                if component[w] != c:
                    bits |= reach_of_component[component[w]]
        reach_of_component.append(bits)
    return [reach_of_component[component[v]] for v in range(n)]
