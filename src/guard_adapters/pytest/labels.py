"""Coverage context labels shared by the collector plugin and the ingest that reads them."""

from typing import Protocol

SESSION = "<session>"  # start-up, conftest imports, plugins: charged to every test
COLLECT = "<collect>"  # collecting NODEID (its module-level code): charged to the tests under it
IMPORT = "<import>"  # executing a repository module's body: charged to every test
FIXTURE = "<fixture>"  # a fixture's setup: charged to every test that requests it
MEMO = "<memo>"  # filling a functools cache entry: charged to every context that read it
SEGMENT = "<seg>"  # part of a context, cut at a watched dict's miss: charged to that context
FILL = "<fill>"  # the segments between a watched dict entry's miss and its write
OWN = "<own>"  # <own>CTX: the lines CTX ran itself, without what it read from caches


class HasContext(Protocol):
    """What holds the collector's current context: read as an attribute on hot paths, where a
    call would cost a frame (and, under a line tracer, its events)."""

    context: str
