"""How the recorded replay is shared between processes, without the replay's modules.

:func:`~.recorded.replay_recorded` deals the recorded variants to its processes
(:func:`deal`). ``experiment run`` forks a process to read a large suite while it imports
the analysis' modules; that process also takes a replay worker's share
(:func:`claim_ahead`) and says so with the suite, before it imports what the replay needs
(numpy, pyarrow: 0.15 s or more), so the suite reaches the run as early as before.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .._fork import worker_count
from ..formats import load_manifest
from ..formats.model import ManifestSpec, SuiteSpec, VariantSpec
from .order import execution_order

__all__ = ["AheadClaim", "claim_ahead", "deal", "replay_shape"]


def replay_shape(
    manifest: ManifestSpec,
    suite: SuiteSpec,
    order: Iterable[tuple[str, int]],
    *,
    forking: bool = True,
) -> tuple[dict[tuple[str, int], int], list[VariantSpec], dict[str, list[int]], int]:
    """:func:`~.recorded.replay_recorded`'s plan: each (variant, trial)'s position in
    ``order``, the recorded variants, the trials of each, and how many processes replay
    them (:func:`~agenticlens_frames._fork.worker_count`; 1 without ``forking``)."""
    positions = {item: position for position, item in enumerate(order)}
    variants = [v for v in manifest.variants if v.target_kind == "recorded"]
    trials = {v.id: sorted(k[1] for k in positions if k[0] == v.id) for v in variants}
    total = sum(map(len, trials.values()))
    workers = worker_count(len(variants), size=total * len(suite.cases)) if forking else 1
    return positions, variants, trials, workers


def _file_size(variant: VariantSpec) -> int:
    try:
        return os.path.getsize(variant.resolved_target)
    except OSError:  # load_recorded names the problem when the file is read
        return 0


def deal(variants: list[VariantSpec], workers: int) -> list[VariantSpec]:
    """The variants in the task order for :func:`~agenticlens_frames._fork.run_tasks`
    (task *i* runs in process ``i % workers``): each process gets a similar share of bytes
    to parse, and the largest files are not parsed at the same time.

    Replaying a file holds its bytes and the parsed trial being scored, more for larger
    files, so two processes each starting on one of the largest files made a peak. Files are
    given out largest first, each to the process with the fewest bytes so far among those
    with a task left; process 0 then parses its files largest first, the others smallest
    first, so their large files come later, once the first one is partly freed.
    """
    sizes = {v.id: _file_size(v) for v in variants}
    counts = [len(range(p, len(variants), workers)) for p in range(workers)]
    shares: list[list[VariantSpec]] = [[] for _ in range(workers)]
    load = [0] * workers
    for variant in sorted(variants, key=lambda v: sizes[v.id], reverse=True):
        p = min((p for p in range(workers) if len(shares[p]) < counts[p]), key=load.__getitem__)
        shares[p].append(variant)
        load[p] += sizes[variant.id]
    for p in range(1, workers):
        shares[p].reverse()  # smallest first
    return [shares[i % workers][i // workers] for i in range(len(variants))]


@dataclass(frozen=True)
class AheadClaim:
    """What a process forked before the run (:func:`claim_ahead`) replays.

    Attributes
    ----------
    manifest, suite
        As that process read them (``suite`` is the one it gives this process's suite
        memo, so :func:`~.recorded.replay_recorded` receives this very object for the
        same bytes).
    positions, workers
        :func:`~.recorded.replay_recorded`'s positions and process count, computed there.
    variant_ids
        The variants it replays: a replay worker's share (:func:`deal`'s process 1).
    """

    manifest: ManifestSpec
    suite: SuiteSpec
    positions: dict[tuple[str, int], int]
    workers: int
    variant_ids: tuple[str, ...]


def claim_ahead(manifest_file: str | Path, suite: SuiteSpec) -> AheadClaim | None:
    """The share of the replay a process forked by ``experiment run`` takes (without
    ``--evaluators`` or ``--run-dir``), or None when it takes none: fewer than two replay
    processes, a live variant, or any problem (the run meets it again, in its place).

    Examples
    --------
    >>> from agenticlens_frames.formats import load_suite
    >>> suite = load_suite("data/support/suite.yaml")
    >>> claim_ahead("data/support/manifest.yaml", suite) is None  # small: one process
    True
    """
    try:
        manifest = load_manifest(manifest_file)
        if any(v.target_kind != "recorded" for v in manifest.variants):
            return None  # live calls first check every file: today's path
        order = execution_order(manifest.variant_ids, manifest.trial_count, manifest.random_seed)
        positions, variants, _, workers = replay_shape(manifest, suite, order)
        if workers < 2:
            return None
        mine = deal(variants, workers)[1::workers]  # what run_tasks' process 1 would do
        return AheadClaim(manifest, suite, positions, workers, tuple(v.id for v in mine))
    except Exception:
        return None
