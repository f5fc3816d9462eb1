"""The numpy kernel: one run's sufficient statistics from its attempts.

A run this toolkit writes is a complete (variant, trial, case) grid stored in that order,
so its columns *are* a 3-D array: viewed without copying, every statistic becomes one
contiguous sum along an axis (cases sum over trials, trials over cases) — SIMD
reductions, no hashing, no scattered accumulators. Runs with missing or shuffled rows
are scattered into such a cube first; anything else (repeated cells, very sparse keys)
goes through ``np.bincount`` over dense integer codes, the method of
research/perf-limits.md. All three give the same numbers (tested).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import InputError
from ._scan import RunScan

__all__ = [
    "CASE_STATS",
    "KERNEL_METHODS",
    "NEEDED_COLUMNS",
    "TRIAL_STATS",
    "RunPartial",
    "rollup_tables",
    "run_partial",
    "split_runs",
]

#: The attempts columns the engines read (everything else stays on disk).
NEEDED_COLUMNS = (
    "run_id",
    "experiment_id",
    "variant_id",
    "case_id",
    "case_index",
    "trial",
    "status",
    "passed",
    "score",
    "latency_ms",
    "cost_usd",
    "score_sum",
    "n_checks",
    "run_order",
)
CASE_STATS = (
    "attempts",
    "passes",
    "failed_attempts",
    "scored",
    "score_sum",
    "score_m2",
    "latency_sum",
    "latency_count",
    "cost_sum",
    "cost_count",
)
TRIAL_STATS = (
    "attempts",
    "passes",
    "failed_attempts",
    "latency_ok_sum",
    "latency_ok_count",
    "cost_sum",
    "cost_count",
    "check_value_sum",
    "check_count",
    "execution_position",
)
_COUNT_STATS = {
    "attempts",
    "passes",
    "scored",
    "latency_count",
    "cost_count",
    "failed_attempts",
    "latency_ok_count",
    "check_count",
}


def stat_dtype(name: str, values: np.ndarray) -> np.ndarray:
    if name == "execution_position":
        return np.asarray(values).astype(np.int32, copy=False)
    if name in _COUNT_STATS:
        return np.asarray(values).astype(np.int64, copy=False)
    return np.asarray(values, dtype=np.float64)


@dataclass
class RunPartial:
    """One run's statistics with run-local keys (what a block task returns)."""

    run_id: str
    case_variant: np.ndarray
    case_index: np.ndarray
    #: Case id per case index of the run (Arrow strings, null where it has no row).
    case_labels: pa.Array
    case_stats: dict[str, np.ndarray]
    trial_variant: np.ndarray
    trial: np.ndarray
    trial_stats: dict[str, np.ndarray]


def _dictionary_chunks(column: pa.ChunkedArray) -> Iterator[pa.DictionaryArray]:
    for chunk in column.chunks:
        yield chunk if pa.types.is_dictionary(chunk.type) else chunk.dictionary_encode()


def _positions(column: pa.ChunkedArray, positions: Mapping[str, int]) -> np.ndarray:
    """Each row's variant position; the dictionary codes themselves when the dictionary is
    already in manifest order (how the archive writes it), else one gather."""
    parts = []
    for chunk in _dictionary_chunks(column):
        table = np.array([positions.get(n, -1) for n in chunk.dictionary.to_pylist()], np.int64)
        codes = chunk.indices.to_numpy(zero_copy_only=False)
        parts.append(codes if np.array_equal(table, np.arange(len(table))) else table[codes])
    if not parts:
        return np.zeros(0, dtype=np.int64)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _flag(column: pa.ChunkedArray, value: str) -> np.ndarray:
    """Rows equal to ``value``, compared on dictionary codes."""
    parts = []
    for chunk in _dictionary_chunks(column):
        names = chunk.dictionary.to_pylist()
        codes = chunk.indices.to_numpy(zero_copy_only=False)
        parts.append(codes == names.index(value) if value in names else np.zeros(len(codes), bool))
    if not parts:
        return np.zeros(0, dtype=bool)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _bits(buffer: pa.Buffer, offset: int, length: int) -> np.ndarray:
    """An Arrow bitmap (validity or boolean values) as one bool per row."""
    packed = np.frombuffer(buffer, dtype=np.uint8)
    return np.unpackbits(packed, count=offset + length, bitorder="little")[offset:].view(bool)


def _joined(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
    if not parts:
        return np.zeros(0, dtype=dtype)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _floats(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """A float column's stored values and which rows hold a number (not null, not NaN).

    The values are Arrow's buffer as is (no copy): what a null slot holds is arbitrary,
    so they are read only through :func:`_zero_missing`. Converting nulls to NaN
    (``to_numpy``) and zeroing them with ``np.where`` took half a run's kernel time.
    """
    values, known = [], []
    for chunk in column.chunks:
        if not pa.types.is_float64(chunk.type):
            chunk = chunk.cast(pa.float64())
        n = len(chunk)
        if n == 0:
            continue
        data = np.frombuffer(chunk.buffers()[1], dtype=np.float64, count=n, offset=chunk.offset * 8)
        ok = ~np.isnan(data)
        if chunk.null_count:
            ok &= _bits(chunk.buffers()[0], chunk.offset, n)
        values.append(data)
        known.append(ok)
    return _joined(values, np.float64), _joined(known, bool)


def _zero_missing(values: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """A new array: ``values`` where ``keep``, +0.0 elsewhere (as ``np.where(keep, values,
    0.0)``, bit for bit). Branch-free, an AND with an all-ones or all-zeros word per row:
    ``np.where`` mispredicts on scattered masks and costs several times more."""
    mask = keep.view(np.uint8).astype(np.uint64)
    np.negative(mask, out=mask)
    np.bitwise_and(mask, np.ascontiguousarray(values).view(np.uint64), out=mask)
    return mask.view(np.float64)


def _booleans(column: pa.ChunkedArray) -> np.ndarray:
    """A boolean column as numpy bools, unpacked from Arrow's bitmap directly."""
    parts = []
    for chunk in column.chunks:
        if chunk.null_count or not pa.types.is_boolean(chunk.type):
            parts.append(chunk.to_numpy(zero_copy_only=False))
        elif len(chunk):
            parts.append(_bits(chunk.buffers()[1], chunk.offset, len(chunk)))
    return _joined(parts, bool)


def _case_labels(column: pa.ChunkedArray, case_index: np.ndarray, n_cases: int) -> pa.Array:
    """Case id per case index (null where the run has no row for that case), as Arrow
    strings: no Python string per case, so the labels of every run can be concatenated,
    sorted and encoded in Arrow."""
    slot = np.full(n_cases, -1, dtype=np.int64)
    dictionaries = []
    start = offset = 0
    for chunk in _dictionary_chunks(column):
        stop = start + len(chunk)
        # Scatter the dictionary code of each row onto its case index (ids and indices
        # are 1:1 within a run); codes of later chunks are offset into their dictionary.
        # Added as int64: a pandas categorical's codes are int8, and int8 + offset wrapped
        # past 127 to a null or to another case's label (no separate widening copy).
        codes = chunk.indices.to_numpy(zero_copy_only=False)
        slot[case_index[start:stop]] = np.add(codes, offset, dtype=np.int64)
        dictionaries.append(chunk.dictionary.cast(pa.string()))
        offset += len(chunk.dictionary)
        start = stop
    values = pa.concat_arrays(dictionaries) if dictionaries else pa.array([], pa.string())
    return values.take(pa.array(slot, mask=slot < 0))


@dataclass
class _RunColumns:
    """One run's attempts as numpy arrays (keys as integers, flags as booleans). Float
    columns come as stored values plus a ``*_known`` mask; see :func:`_floats`."""

    vpos: np.ndarray
    case_index: np.ndarray
    trial: np.ndarray
    failed: np.ndarray
    ok: np.ndarray
    passed: np.ndarray
    score: np.ndarray
    score_known: np.ndarray
    latency: np.ndarray
    latency_known: np.ndarray
    cost: np.ndarray
    cost_known: np.ndarray
    check_sum: np.ndarray
    check_known: np.ndarray
    n_checks: np.ndarray
    run_order: np.ndarray
    n_variants: int

    def __len__(self) -> int:
        return len(self.vpos)


def _run_columns(table: pa.Table, run_id: str, variant_ids: Sequence[str]) -> _RunColumns:
    vpos = _positions(table.column("variant_id"), {v: i for i, v in enumerate(variant_ids)})
    if len(vpos) and vpos.min() < 0:
        raise InputError(f"run {run_id}: attempts name a variant its manifest does not have")
    status = table.column("status")
    score, score_known = _floats(table.column("score"))
    latency, latency_known = _floats(table.column("latency_ms"))
    cost, cost_known = _floats(table.column("cost_usd"))
    check_sum, check_known = _floats(table.column("score_sum"))
    return _RunColumns(
        vpos=vpos,
        case_index=table.column("case_index").to_numpy(),
        trial=table.column("trial").to_numpy(),
        failed=_flag(status, "trial_failed"),
        ok=_flag(status, "ok"),
        passed=_booleans(table.column("passed")),
        score=score,
        score_known=score_known,
        latency=latency,
        latency_known=latency_known,
        cost=cost,
        cost_known=cost_known,
        check_sum=check_sum,
        check_known=check_known,
        n_checks=table.column("n_checks").to_numpy(),
        run_order=table.column("run_order").to_numpy(),
        n_variants=len(variant_ids),
    )


@dataclass
class _Grid:
    """A run laid out as a (variant, trial, case) cube: which keys each axis holds, how
    to turn a per-row array into the cube, and which cells hold a row (None = all)."""

    v_seen: np.ndarray
    t_seen: np.ndarray
    c_seen: np.ndarray
    to_cube: Callable[[np.ndarray], np.ndarray]
    filled: np.ndarray | None

    @property
    def shape(self) -> tuple[int, int, int]:
        return (len(self.v_seen), len(self.t_seen), len(self.c_seen))


def _first_break(values: np.ndarray) -> int:
    """Length of the leading strictly increasing run of ``values``."""
    if len(values) < 2:
        return len(values)
    stop = values[1:] <= values[:-1]
    k = int(np.argmax(stop))
    return k + 1 if stop[k] else len(values)


def _complete_grid(cols: _RunColumns) -> _Grid | None:
    """The zero-copy cube of a run stored as a complete grid in (variant, trial, case)
    order — what every run written by this toolkit is: each (variant, trial, case) has
    exactly one attempt row, sorted. Checked in a few vectorised passes; None if not."""
    ci, tr, vp = cols.case_index, cols.trial, cols.vpos
    n = len(ci)
    n_case = _first_break(ci)
    if n % n_case:
        return None
    blocks = n // n_case
    tb, vb = tr[::n_case], vp[::n_case]
    same_variant = np.concatenate([[True], vb[1:] == vb[:-1]])
    n_trial = _first_break(np.where(same_variant, tb, -1)) if blocks > 1 else 1
    if blocks % n_trial:
        return None
    n_var = blocks // n_trial
    v_seen, t_seen, c_seen = vb[::n_trial], tb[:n_trial], ci[:n_case]
    if not (
        np.array_equal(tb.reshape(n_var, n_trial), np.broadcast_to(t_seen, (n_var, n_trial)))
        and np.all(vb.reshape(n_var, n_trial) == v_seen[:, None])
        and _first_break(v_seen) == n_var
        and _first_break(t_seen) == n_trial
        and np.all(ci.reshape(blocks, n_case) == c_seen)
        and np.all(tr.reshape(blocks, n_case) == tb[:, None])
        and np.all(vp.reshape(blocks, n_case) == vb[:, None])
    ):
        return None
    shape = (n_var, n_trial, n_case)
    return _Grid(v_seen, t_seen, c_seen, lambda a: a.reshape(shape), None)


def _ranks(values: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Dense ranks of small non-negative integers (bitmap + cumsum, no sorting) and the
    values present, ascending."""
    present = np.zeros(size, dtype=bool)
    present[values] = True
    rank = np.cumsum(present) - 1
    return rank[values], np.flatnonzero(present)


def _scattered_grid(cols: _RunColumns) -> _Grid | None:
    """A cube filled by scattering each column (rows in any order, some cells empty);
    None when it would be more than about twice the rows or rows repeat a cell."""
    n = len(cols)
    v_rank, v_seen = _ranks(cols.vpos, cols.n_variants)
    t_rank, t_seen = _ranks(cols.trial, int(cols.trial.max()) + 1)
    c_rank, c_seen = _ranks(cols.case_index, int(cols.case_index.max()) + 1)
    shape = (len(v_seen), len(t_seen), len(c_seen))
    size = shape[0] * shape[1] * shape[2]
    if size > 2 * n + 1024:
        return None
    cell = (v_rank * shape[1] + t_rank) * shape[2] + c_rank
    filled = np.zeros(size, dtype=bool)
    filled[cell] = True
    if np.count_nonzero(filled) != n:
        return None

    def to_cube(values: np.ndarray) -> np.ndarray:
        out = np.zeros(size, dtype=values.dtype)
        out[cell] = values
        return out.reshape(shape)

    return _Grid(v_seen, t_seen, c_seen, to_cube, filled.reshape(shape))


def _count(mask: np.ndarray, axis: int) -> np.ndarray:
    # Summing a bool array goes through a slow casting loop; adding its bytes as int32
    # is several times faster and exact.
    return np.add.reduce(mask.view(np.uint8), axis=axis, dtype=np.int32)


def _grid_stats(cols: _RunColumns, grid: _Grid) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every statistic as a contiguous sum over one cube axis: cases sum over trials,
    trials over cases (SIMD reductions, no scattered accumulators)."""
    n_var, n_trial, n_case = grid.shape
    cube = grid.to_cube
    scored_mask = cols.score_known & ~cols.failed
    passed3 = cube(cols.passed)
    scored3 = cube(scored_mask)
    score3 = cube(_zero_missing(cols.score, scored_mask))
    latency3 = cube(_zero_missing(cols.latency, cols.latency_known))
    cost3 = cube(_zero_missing(cols.cost, cols.cost_known))
    cost_known3 = cube(cols.cost_known)
    failed3 = cube(cols.failed)

    scored = _count(scored3, 1)
    score_sum = score3.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = score_sum / np.maximum(scored, 1)
    # score3 is this function's own array: the deviations overwrite it.
    deviation = np.subtract(score3, mean[:, None, :], out=score3)
    deviation *= scored3
    if grid.filled is None:
        counts = np.full((n_var, n_case), n_trial, dtype=np.int64)
        tcounts = np.full((n_var, n_trial), n_case, dtype=np.int64)
        case_obs = trial_obs = None  # a complete grid: every cell observed
    else:
        counts = _count(grid.filled, 1)
        tcounts = _count(grid.filled, 2)
        case_obs = counts.ravel() > 0
        trial_obs = tcounts.ravel() > 0
    # The trial's run_order, constant within it in every run this toolkit writes; the
    # largest of its rows otherwise, the rule of every engine (empty cells hold 0).
    run_order = cube(cols.run_order).max(axis=2)

    def per_case(values: np.ndarray) -> np.ndarray:
        return values.ravel() if case_obs is None else values.ravel()[case_obs]

    def trial_rows(values: np.ndarray) -> np.ndarray:
        return values.ravel() if trial_obs is None else values.ravel()[trial_obs]

    def per_trial(values: np.ndarray) -> np.ndarray:
        if values.dtype == bool:
            return trial_rows(_count(values, 2))
        if values.dtype.kind in "iu":
            return trial_rows(values.sum(axis=2, dtype=np.int64))
        return trial_rows(values.sum(axis=2))

    case = {
        "variant": per_case(np.repeat(grid.v_seen, n_case)),
        "case_index": per_case(np.tile(grid.c_seen, n_var)),
        "attempts": per_case(counts),
        "passes": per_case(_count(passed3, 1)),
        "failed_attempts": per_case(_count(failed3, 1)),
        "scored": per_case(scored),
        "score_sum": per_case(score_sum),
        "score_m2": per_case(np.einsum("vtc,vtc->vc", deviation, deviation)),
        "latency_sum": per_case(latency3.sum(axis=1)),
        "latency_count": per_case(_count(cube(cols.latency_known), 1)),
        "cost_sum": per_case(cost3.sum(axis=1)),
        "cost_count": per_case(_count(cost_known3, 1)),
    }
    ok_latency3 = cube(cols.ok & cols.latency_known)
    trial = {
        "variant": trial_rows(np.repeat(grid.v_seen, n_trial)),
        "trial": trial_rows(np.tile(grid.t_seen, n_var)),
        "attempts": trial_rows(tcounts),
        "passes": per_trial(passed3),
        "failed_attempts": per_trial(failed3),
        "latency_ok_sum": per_trial(latency3 * ok_latency3),
        "latency_ok_count": per_trial(ok_latency3),
        "cost_sum": per_trial(cost3),
        "cost_count": per_trial(cost_known3),
        "check_value_sum": per_trial(cube(_zero_missing(cols.check_sum, cols.check_known))),
        "check_count": per_trial(cube(cols.n_checks)),
        "execution_position": trial_rows(run_order),
    }
    return case, trial


def _bincount_stats(cols: _RunColumns) -> tuple[dict[str, Any], dict[str, Any]]:
    """Statistics with one ``np.bincount`` per sum over dense integer group codes
    (``position × n_cases + case_index``): the general path (sparse or repeated rows)."""
    n_var = cols.n_variants
    case_index = cols.case_index.astype(np.int64)
    trial_no = cols.trial.astype(np.int64)
    n_case = int(case_index.max()) + 1
    n_trial = int(trial_no.max()) + 1
    passed = cols.passed.astype(np.float64)
    g = cols.vpos * n_case + case_index
    size = n_var * n_case
    counts = np.bincount(g, minlength=size)
    obs = np.flatnonzero(counts)

    def total(weights: np.ndarray) -> np.ndarray:
        return np.bincount(g, weights=weights, minlength=size)

    scored_mask = ~cols.failed & cols.score_known
    scored = total(scored_mask)
    score0 = _zero_missing(cols.score, scored_mask)
    score_sum = total(score0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = score_sum / np.maximum(scored, 1.0)
    deviation = np.where(scored_mask, score0 - mean[g], 0.0)
    cost0 = _zero_missing(cols.cost, cols.cost_known)
    case = {
        "variant": obs // n_case,
        "case_index": obs % n_case,
        "attempts": counts[obs],
        "passes": total(passed)[obs],
        "failed_attempts": total(cols.failed)[obs],
        "scored": scored[obs],
        "score_sum": score_sum[obs],
        "score_m2": total(deviation * deviation)[obs],
        "latency_sum": total(_zero_missing(cols.latency, cols.latency_known))[obs],
        "latency_count": total(cols.latency_known)[obs],
        "cost_sum": total(cost0)[obs],
        "cost_count": total(cols.cost_known)[obs],
    }
    gt = cols.vpos * n_trial + trial_no
    tsize = n_var * n_trial
    tcounts = np.bincount(gt, minlength=tsize)
    tobs = np.flatnonzero(tcounts)

    def ttotal(weights: np.ndarray) -> np.ndarray:
        return np.bincount(gt, weights=weights, minlength=tsize)[tobs]

    ok_latency = cols.ok & cols.latency_known
    # The largest run_order of the trial's rows (constant within a trial in every run
    # this toolkit writes), the rule of every engine.
    run_order = np.zeros(tsize, dtype=np.int64)
    np.maximum.at(run_order, gt, cols.run_order.astype(np.int64))
    trial = {
        "variant": tobs // n_trial,
        "trial": tobs % n_trial,
        "attempts": tcounts[tobs],
        "passes": ttotal(passed),
        "failed_attempts": ttotal(cols.failed),
        "latency_ok_sum": ttotal(_zero_missing(cols.latency, ok_latency)),
        "latency_ok_count": ttotal(ok_latency),
        "cost_sum": ttotal(cost0),
        "cost_count": ttotal(cols.cost_known),
        "check_value_sum": ttotal(_zero_missing(cols.check_sum, cols.check_known)),
        "check_count": ttotal(cols.n_checks.astype(np.float64)),
        "execution_position": run_order[tobs],
    }
    return case, trial


#: Kernel methods: "grid" (zero-copy cube of a complete sorted run), "cube" (scattered
#: cube), "bincount" (general); "auto" tries them in that order.
KERNEL_METHODS = ("auto", "grid", "cube", "bincount")


def run_partial(
    table: pa.Table, run_id: str, variant_ids: Sequence[str], *, method: str = "auto"
) -> RunPartial:
    """The numpy kernel: one run's sufficient statistics from its attempts.

    Three methods give the same numbers: ``"grid"`` views a run stored as a complete,
    sorted (variant, trial, case) grid — every run this toolkit writes — as a cube
    without copying and sums along its axes; ``"cube"`` scatters rows into such a cube
    (rows in any order, some missing); ``"bincount"`` accumulates with ``np.bincount``
    over integer group codes (any input, the fallback). ``"auto"`` takes the first that
    applies.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> table = pa.Table.from_pandas(run.attempts.assign(run_id="r"), preserve_index=False)
    >>> part = run_partial(table, "r", run.manifest.variant_ids)
    >>> int(part.case_stats["attempts"].sum()), len(part.trial)
    (350, 25)
    """
    if method not in KERNEL_METHODS:
        raise InputError(f"unknown kernel method {method!r}", hint=f"one of {KERNEL_METHODS}")
    cols = _run_columns(table, run_id, variant_ids)
    if len(cols) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return RunPartial(
            run_id,
            empty,
            empty,
            pa.array([], pa.string()),
            {n: empty for n in CASE_STATS},
            empty,
            empty,
            {n: empty for n in TRIAL_STATS},
        )
    grid = None
    if method in ("auto", "grid"):
        grid = _complete_grid(cols)
    if grid is None and method in ("auto", "cube"):
        grid = _scattered_grid(cols)
    if grid is None and method in ("grid", "cube"):
        raise InputError(f"run {run_id}: its attempts do not form a {method}")
    case, trial = _grid_stats(cols, grid) if grid is not None else _bincount_stats(cols)
    case_index = cols.case_index
    n_labels = int(case_index.max()) + 1
    column = table.column("case_id")
    if grid is not None and grid.filled is None and column.num_chunks == 1:
        # A complete grid's first (variant, trial) block lists every case once.
        first = next(_dictionary_chunks(column)).slice(0, len(grid.c_seen))
        dictionary = first.dictionary.cast(pa.string())
        if len(grid.c_seen) == n_labels:  # case indices 0..n-1, all present
            labels = dictionary.take(first.indices)
        else:
            slot = np.full(n_labels, -1, dtype=np.int64)
            slot[grid.c_seen] = first.indices.to_numpy(zero_copy_only=False)
            labels = dictionary.take(pa.array(slot, mask=slot < 0))
    else:
        labels = _case_labels(column, case_index, n_labels)
    return RunPartial(
        run_id=run_id,
        case_variant=np.asarray(case.pop("variant")).astype(np.int32),
        case_index=np.asarray(case.pop("case_index")).astype(np.int32),
        case_labels=labels,
        case_stats={k: stat_dtype(k, v) for k, v in case.items()},
        trial_variant=np.asarray(trial.pop("variant")).astype(np.int32),
        trial=np.asarray(trial.pop("trial")).astype(np.int32),
        trial_stats={k: stat_dtype(k, v) for k, v in trial.items()},
    )


def listed_positions(
    trials: pa.Table, variant_ids: Sequence[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """A run's ``trials`` table as (variant position, trial, execution position) per
    row, or None when it has no such columns."""
    if not {"variant_id", "trial", "execution_position"} <= set(trials.column_names):
        return None
    known = {v: i for i, v in enumerate(variant_ids)}
    names = trials.column("variant_id").to_pylist()
    vpos = np.array([known.get(str(v), -1) for v in names], dtype=np.int64)
    trial = trials.column("trial").to_numpy(zero_copy_only=False).astype(np.int64)
    position = trials.column("execution_position").to_numpy(zero_copy_only=False)
    keep = (vpos >= 0) & (trial >= 0) & ~np.isnan(position.astype(np.float64))
    return vpos[keep], trial[keep], position[keep].astype(np.int64)


def looked_up_positions(
    vpos: np.ndarray,
    trial: np.ndarray,
    current: np.ndarray,
    listed: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
) -> np.ndarray:
    """``current`` (per (variant position, trial) row) with each pair that ``listed``
    (:func:`listed_positions`) holds replaced by its execution position there."""
    if listed is None or not len(vpos):
        return np.asarray(current)
    l_vpos, l_trial, l_position = listed
    width = int(max(trial.max(), l_trial.max(initial=0))) + 1
    height = int(max(vpos.max(), l_vpos.max(initial=0))) + 1
    lookup = np.full(height * width, -1, dtype=np.int64)
    lookup[l_vpos * width + l_trial] = l_position
    found = lookup[vpos.astype(np.int64) * width + trial.astype(np.int64)]
    return np.where(found >= 0, found, current)


def with_listed_positions(
    partial: RunPartial, trials: pa.Table, variant_ids: Sequence[str]
) -> RunPartial:
    """``partial`` with each trial's execution position as the run's ``trials`` table
    lists it (the definition, docs/data-model.md), not as its attempts' ``run_order``
    gives it (in place; returned for chaining)."""
    stats = partial.trial_stats
    stats["execution_position"] = stat_dtype(
        "execution_position",
        looked_up_positions(
            partial.trial_variant,
            partial.trial,
            stats["execution_position"],
            listed_positions(trials, variant_ids),
        ),
    )
    return partial


def split_batch_by_run(batch: pa.RecordBatch) -> Iterator[tuple[str, pa.RecordBatch]]:
    """Pieces of a batch holding one run each (one piece when the batch is one run)."""
    column = batch.column(batch.schema.get_field_index("run_id"))
    if not pa.types.is_dictionary(column.type):
        column = column.dictionary_encode()
    codes = column.indices.to_numpy(zero_copy_only=False)
    names = column.dictionary.to_pylist()
    if len(codes) == 0:
        return
    if (codes == codes[0]).all():
        yield names[codes[0]], batch
        return
    order = np.argsort(codes, kind="stable")
    ordered = batch.take(pa.array(order))
    sorted_codes = codes[order]
    edges = np.flatnonzero(np.diff(sorted_codes)) + 1
    bounds = [0, *edges.tolist(), len(order)]
    for start, stop in itertools.pairwise(bounds):
        yield names[sorted_codes[start]], ordered.slice(start, stop - start)


def split_runs(table: pa.Table) -> dict[str, pa.Table]:
    """An attempts table cut into one table per run (zero-copy when runs are chunked).

    Examples
    --------
    >>> t = pa.table({"run_id": ["a", "b", "a"], "x": [1, 2, 3]})
    >>> {k: v.column("x").to_pylist() for k, v in split_runs(t).items()}
    {'a': [1, 3], 'b': [2]}
    """
    pieces: dict[str, list[pa.RecordBatch]] = {}
    for batch in table.to_batches():
        for run_id, piece in split_batch_by_run(batch):
            pieces.setdefault(run_id, []).append(piece)
    return {run: pa.Table.from_batches(batches) for run, batches in pieces.items()}


def rollup_tables(partial: RunPartial) -> dict[str, pa.Table]:
    """A run's statistics as the rollup tables written at ``Archive.add`` time
    (``case_stats``: one row per (variant, case) with its case id; ``trial_stats``: one
    row per (variant, trial)); :func:`~._rollup.read_rollups` reads them back exactly."""
    labels = partial.case_labels.take(pa.array(partial.case_index)).dictionary_encode()
    cases: dict[str, Any] = {
        "variant_position": pa.array(partial.case_variant, pa.int32()),
        "case_index": pa.array(partial.case_index, pa.int32()),
        "case_id": labels,
    }
    cases.update({n: stat_dtype(n, partial.case_stats[n]) for n in CASE_STATS})
    trials: dict[str, Any] = {
        "variant_position": pa.array(partial.trial_variant, pa.int32()),
        "trial": pa.array(partial.trial, pa.int32()),
    }
    trials.update({n: stat_dtype(n, partial.trial_stats[n]) for n in TRIAL_STATS})
    return {"case_stats": pa.table(cases), "trial_stats": pa.table(trials)}


def partials_for_scans(scans: Sequence[RunScan]) -> list[RunPartial]:
    """A block task: read whole runs and run the kernel (module-level, so it pickles)."""
    return [
        run_partial(
            scan.read("attempts", NEEDED_COLUMNS, required=True), scan.run_id, scan.variant_ids
        )
        for scan in scans
    ]
