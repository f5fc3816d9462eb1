"""Recorded-trials files: saved samples replayed by ``recorded`` variants (spec §7.1).

AgenticLens validates a recorded file only when a trial of its variant runs, and a bad
sample (unknown or repeated case id, non-string output, invalid trace) then fails every
trial of that variant. We refuse such a file at load time instead, naming the sample.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agenticlens_frames.errors import format_location
from agenticlens_frames.formats._io import Source, close_match, describe, gc_paused, read_document
from agenticlens_frames.formats.model import RecordedTrials, SuiteSpec
from agenticlens_frames.formats.traces import Trace, normalize_trace

__all__ = ["load_recorded"]


def load_recorded(path: str | Path, suite: SuiteSpec, *, enrich: bool = False) -> RecordedTrials:
    """Load and validate a recorded-trials file against a suite.

    The file is JSON (``.json``) or YAML: a mapping with a non-empty ``trials`` list whose
    entries are ``{"samples": [...]}`` or bare lists of samples; other keys are ignored.
    Each sample needs a ``case_id`` naming a suite case (at most once per trial) and a
    string ``output``; its optional ``trace`` (absent means ``{}``) is validated and
    normalised by :func:`~agenticlens_frames.formats.traces.normalize_trace`.

    Parameters
    ----------
    path
        The recorded-trials file (usually a variant's ``resolved_target``).
    suite
        The suite the samples answer.
    enrich
        Passed to :func:`~agenticlens_frames.formats.traces.normalize_trace`: also build the
        namespaced ``agenticlens.*`` span attributes of Run-shaped traces.

    Returns
    -------
    RecordedTrials
        ``trials[i]`` holds trial *i + 1*'s samples as dicts ``{"case_id": str, "output":
        str, "trace": Trace}``: the trace is already normalised (a
        :class:`~agenticlens_frames.formats.traces.Trace`, not the raw mapping).

    Raises
    ------
    InputError
        For an unreadable file or any invalid entry, e.g.
        ``trials/v01.json: trials[3].samples[17].case_id: ...``.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> from agenticlens_frames.formats.model import CaseSpec, SuiteSpec
    >>> suite = SuiteSpec(pathlib.Path("suite.yaml"), "demo", "1",
    ...                   (CaseSpec("c1", "Case 1", 0, expected_contains=("hi",)),))
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "v1.json").write_text(json.dumps(
    ...     {"trials": [{"samples": [{"case_id": "c1", "output": "hi there"}]}]}))
    >>> recorded = load_recorded(folder / "v1.json", suite)
    >>> sample = recorded.trials[0][0]
    >>> sample["case_id"], sample["output"], sample["trace"].total_latency_ms
    ('c1', 'hi there', 0.0)
    """
    path = Path(path)
    with gc_paused():
        return _load(path, suite, enrich)


def _load(path: Path, suite: SuiteSpec, enrich: bool) -> RecordedTrials:
    source = Source(path)
    document = read_document(path)
    trials = document.get("trials") if isinstance(document, dict) else None
    if not isinstance(trials, list) or not trials:
        got = describe(trials) if isinstance(document, dict) else describe(document)
        where = "'trials' is" if isinstance(document, dict) else "the top level is"
        source.fail(
            (),
            f"a recorded trials file must define a non-empty 'trials' list ({where} {got})",
            'write {"trials": [{"samples": [...]}, ...]}',
        )
    case_ids = frozenset(suite.case_ids)
    del document  # ``trials`` holds all we need
    loaded = []
    for index, entry in enumerate(trials):
        loaded.append(_trial(source, entry, index, case_ids, suite, enrich))
        # The parsed entry is done with: dropping it now keeps one copy of the samples in
        # memory (raw + normalised), not two, while a large file loads.
        trials[index] = None
    return RecordedTrials(path=path, trials=tuple(loaded))


def _trial(
    source: Source,
    entry: Any,
    index: int,
    case_ids: frozenset[str],
    suite: SuiteSpec,
    enrich: bool,
) -> tuple[dict[str, Any], ...]:
    if isinstance(entry, dict):
        items = entry.get("samples")
        where: tuple[str | int, ...] = ("trials", index, "samples")
    else:
        items = entry
        where = ("trials", index)
    if not isinstance(items, list):
        source.fail(
            ("trials", index),
            f"recorded trial {index + 1} must be a list of samples or a mapping with a "
            f"'samples' list, got {describe(entry)}",
        )
    file = source.path
    seen: dict[str, int] = {}
    samples: list[dict[str, Any]] = []
    for position, item in enumerate(items):
        if type(item) is not dict and not isinstance(item, dict):
            source.fail((*where, position), f"expected a sample mapping, got {describe(item)}")
        case_id = item.get("case_id")
        if type(case_id) is not str or case_id not in case_ids or case_id in seen:
            _bad_case_id(source, (*where, position), item, case_id, seen, where, suite)
        seen[case_id] = position
        output = item.get("output")
        if type(output) is not str and not isinstance(output, str):
            _bad_output(source, (*where, position), item)
        raw_trace = item.get("trace", _NO_TRACE)
        if raw_trace is _NO_TRACE:
            trace = _empty_trace()
        elif raw_trace is None:
            source.fail(
                (*where, position, "trace"),
                "expected a trace mapping, got null",
                "remove the key when there is no trace",
            )
        else:
            trace = normalize_trace(
                raw_trace, file=file, location=(*where, position, "trace"), enrich=enrich
            )
        samples.append({"case_id": case_id, "output": output, "trace": trace})
    return tuple(samples)


_NO_TRACE: Any = object()


def _empty_trace() -> Trace:
    return Trace("", (), (), 0.0, None, None, {}, "eval")


def _bad_case_id(
    source: Source,
    location: tuple[str | int, ...],
    item: dict[str, Any],
    case_id: Any,
    seen: dict[str, int],
    where: tuple[str | int, ...],
    suite: SuiteSpec,
) -> None:
    if "case_id" not in item:
        source.fail(location, "missing required key 'case_id'")
    if not isinstance(case_id, str):
        source.fail((*location, "case_id"), f"expected a string, got {describe(case_id)}")
    if case_id in seen:
        first = format_location((*where, seen[case_id]))
        source.fail(
            (*location, "case_id"),
            f"case {case_id!r} already has a sample in this trial, at {first}",
            "keep one sample per case and trial",
        )
    match = close_match(case_id, suite.case_ids) if len(suite.cases) <= 2000 else None
    source.fail(
        (*location, "case_id"),
        f"{case_id!r} is not a case of suite {suite.name!r} ({suite.path})",
        f"did you mean {match!r}?" if match else "check that the file answers this suite",
    )


def _bad_output(source: Source, location: tuple[str | int, ...], item: dict[str, Any]) -> None:
    if "output" not in item:
        source.fail(location, "missing required key 'output'")
    output = item["output"]
    source.fail(
        (*location, "output"),
        f"expected a string, got {describe(output)}",
        "record the agent's answer as text; serialise structured output as a JSON string",
    )
