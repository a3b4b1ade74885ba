"""The ``guard_*`` hooks, grouped by lifecycle phase.

Adapters and third-party plugins implement them with ``guard_core.hookimpl``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from guard_core.bases import Distance, EvidenceBase
    from guard_core.model import Decision
    from guard_core.plugins import AdapterRegistry
    from guard_core.ports import PolicyInput, Vote
    from guard_core.rules import Rule

hookspec = pluggy.HookspecMarker("guard")

# -- start-up ---------------------------------------------------------------------------------


@hookspec(firstresult=True)
def guard_repository_root(start: Path) -> Path | None:
    """The root of the repository that holds the folder ``start``; the first answer wins.

    The built-in git plug-in answers with git's top level. Called before the settings are
    read (they live at the root), so only built-in and explicitly given plug-ins take part.

    :return: the root folder, or None when ``start`` is in no repository this plug-in knows.
    """


@hookspec(firstresult=True)
def guard_main_worktree(root: Path) -> Path | None:
    """The main worktree of the repository whose worktree is ``root``, when it has linked
    worktrees; the first answer wins (the built-in git plug-in gives it).

    Every worktree then shares the main worktree's state folder (one embedded server, one
    evidence), and the graph keeps several evidence bases so that a refresh in one worktree
    does not replace another's.

    :return: the main worktree's root (``root`` itself from the main one), or None when the
        repository has a single worktree.
    """


@hookspec(firstresult=True)
def guard_commit_distances(repo: Path, bases: Sequence[EvidenceBase]) -> dict[str, Distance] | None:
    """How far each evidenced commit is from the HEAD of ``repo``, for the ones this clone
    has; the first answer wins (the built-in git plug-in gives it). A base left out is one
    the check cannot read.

    :return: ``{sha: Distance}``, or None when ``repo`` is not one this plug-in knows.
    """


@hookspec
def guard_register_adapters(registry: AdapterRegistry) -> None:
    """Register adapter factories (store, slicer, runner, collector, trust policy).

    :param registry: call ``registry.add_store(name, factory)`` and its siblings; a factory
        takes the :class:`~guard_core.config.Settings` and returns the adapter.
    """


# -- decision ---------------------------------------------------------------------------------


@hookspec
def guard_trust_vote(data: PolicyInput) -> Vote | None:
    """Cast an extra vote on a change, beside the registered trust policies.

    All results are collected; the most conservative vote (the widest level) wins, and a
    plugin that raises counts as a vote for run-all.

    :param data: the change set and the evidence the graph holds for it.
    :return: a :class:`~guard_core.ports.Vote`, or None to abstain.
    """


@hookspec
def guard_selection_rules() -> Sequence[Rule] | None:
    """Selection rules to run after the built-in ones (:mod:`guard_core.rules`).

    A rule reads a :class:`~guard_core.rules.RuleInput` (the change, the evidence reader, the
    settings) and adds tests with reasons, or overrides, to the selection; it cannot remove
    any. A rule that raises makes the check run-all.

    :return: the rules, in the order they run, or None.
    """


@hookspec
def guard_adjust_decision(decision: Decision, data: PolicyInput) -> Decision | None:
    """Adjust a finished decision, for instance to add tests a team always wants run.

    A result that would run fewer tests than ``decision`` is ignored with a warning: plugins
    can widen a selection, never narrow it.

    :param decision: the decision as the engine made it.
    :param data: the evidence the decision was made from.
    :return: a wider decision, or None to leave it unchanged.
    """
