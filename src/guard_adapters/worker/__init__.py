"""The warm worker of a repository: a process that keeps Guard's imports loaded and answers
the read-only commands (``client.py``: asking it, starting and stopping it; ``server.py``: the
worker itself)."""
