"""The evaluation harness: prepares real projects from PyPI sdists, replays a frozen set of
edits on them, and compares test-selection strategies on paired metrics (``python -m evals``)."""
