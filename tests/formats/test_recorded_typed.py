"""formats/_recorded_typed.py: complete trials in the common layouts, decoded by msgspec.

The reference is :func:`load_recorded` (one normalised :class:`Trace` per sample). Valid
files written to take the typed reading (every trace an EvalTrace, or every trace a
Run, with the awkward values it must read like the reference: integers in float fields,
-0.0, integer span costs whose exact sum differs from a float sum, absent and null keys,
escapes, duplicate keys) must be read typed and give the reference's columns; JSON text
the reference reads otherwise or refuses must not be read typed.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from agenticlens_frames.formats import load_recorded
from agenticlens_frames.formats import recorded as recorded_module
from agenticlens_frames.formats._recorded_typed import decode_trial, run_latency_ms
from agenticlens_frames.formats.recorded import TrialColumns, load_recorded_columns

from .test_recorded_columns import CASE_IDS, SUITE, _expected, _outcome

INDEX = {case_id: i for i, case_id in enumerate(CASE_IDS)}


def _plain_eval(rng: random.Random) -> dict:
    trace: dict = {"total_latency_ms": rng.choice([12.5, 0.0, -0.0, 7, 1e15, 1e-300])}
    if rng.random() < 0.7:
        trace["trace_id"] = rng.choice(["t-1", "", "ид-🙂"])
    if rng.random() < 0.7:
        trace["spans"] = [
            {
                "tool_name": rng.choice(["search", None, "", "poiščí"]),
                **({"attributes": {"a": [1, {"b": None}]}} if rng.random() < 0.5 else {}),
                **({"span_id": "s"} if rng.random() < 0.3 else {}),
            }
            for _ in range(rng.randint(0, 3))
        ]
    cost = rng.choice([None, 0.0012, 2, 1e-9, -0.0])
    if cost is not None or rng.random() < 0.3:
        trace["estimated_cost_usd"] = cost
    if rng.random() < 0.6:
        trace["cost_source"] = rng.choice(["measured", "estimated", None])
    if rng.random() < 0.7:
        trace["metadata"] = rng.choice(
            [{"turn_count": 3}, {"turn_count": [1, "x"]}, {"turn_count": 2**70}, {}, {"k": [1]}]
        )
    if rng.random() < 0.2:
        trace["run_id"] = "ignored: total_latency_ms makes it an EvalTrace"
    return trace


def _plain_run(rng: random.Random) -> dict:
    trace: dict = {}
    # One Run key at least; a null value still makes the trace a Run.
    for key in rng.sample(["run_id", "application_name", "started_at", "completed_at"], 2):
        trace[key] = None if key in ("run_id", "application_name") and rng.random() < 0.3 else "r"
    if "started_at" in trace or rng.random() < 0.5:
        trace["started_at"] = rng.choice(["2026-01-05T08:00:00.000Z", "2026-01-05T08:00:00+02:00"])
        trace["completed_at"] = rng.choice(
            ["2026-01-05T08:00:01.250Z", "2026-01-05T07:59:59Z", "2026-01-05T09:00:01+02:00", None]
        )
    if "completed_at" in trace and trace["completed_at"] == "r":
        trace["completed_at"] = None
    if rng.random() < 0.8:
        trace["trace_id"] = rng.choice(["t-1", "", "ид-🙂"])
    trace["spans"] = rng.choice(
        [
            None,
            [],
            [
                {
                    "span_id": f"s{i}",
                    "tool_name": rng.choice(["search", None, "refund", ""]),
                    "estimated_cost_usd": rng.choice([0.001, 0.0, None, 3, -0.0, 10**15]),
                    **(
                        {"attributes": rng.choice([None, {"k": "v"}])} if rng.random() < 0.5 else {}
                    ),
                }
                for i in range(rng.randint(1, 4))
            ],
        ]
    )
    if rng.random() < 0.4:
        trace["cost_source"] = rng.choice(["measured", None, "guessed", 3])
    if rng.random() < 0.7:
        trace["metadata"] = rng.choice(
            [{"turn_count": 2}, {"cost_source": "measured"}, None, {"cost_source": [1]}]
        )
    return trace


def _plain_document(rng: random.Random, shape: str) -> dict:
    trials = []
    for _ in range(rng.randint(1, 4)):
        ids = list(CASE_IDS)
        rng.shuffle(ids)
        samples = []
        for case_id in ids:
            sample: dict = {"case_id": case_id, "output": rng.choice(["ok", "", "Straße ✓"])}
            if shape == "run":
                sample["trace"] = _plain_run(rng)
            elif rng.random() < 0.8:
                sample["trace"] = _plain_eval(rng)
            if rng.random() < 0.2:
                sample["note"] = {"ignored": [1, 2]}
            samples.append(sample)
        trials.append({"samples": samples})
    return {"variant_id": "v", "trials": trials}


def _columns_as_text(columns: TrialColumns) -> list[list[str]]:
    # repr: -0.0 and 0.0, True and 1, 3 and 3.0 must not pass for each other
    return [[repr(v) for v in getattr(columns, name)] for name in TrialColumns.__slots__]


def _read_typed_only(monkeypatch: pytest.MonkeyPatch, path: Path) -> object:
    """load_recorded_columns with the reference column reader switched off."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a trial went to the reference reader")

    monkeypatch.setattr(recorded_module, "_trial_columns", refuse)
    return load_recorded_columns(path, SUITE)


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("shape", ["eval", "run"])
def test_plain_files_are_read_typed_as_the_reference_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, shape: str
) -> None:
    rng = random.Random(seed)
    path = tmp_path / "v.json"
    path.write_text(json.dumps(_plain_document(rng, shape), ensure_ascii=seed % 2 == 0))
    reference = load_recorded(path, SUITE)
    ours = _read_typed_only(monkeypatch, path)
    assert len(ours.trials) == len(reference.trials)
    for mine, theirs in zip(ours.trials, reference.trials, strict=True):
        assert _columns_as_text(mine) == _columns_as_text(_expected(theirs))


def _trial_text(samples: list[str]) -> str:
    return '{"samples": [' + ", ".join(samples) + "]}"


def _file_with(tmp_path: Path, sample: str, plain: str) -> Path:
    """A file of two trials: all plain samples, then the first sample replaced."""
    first = _trial_text([plain.replace("CASE", c) for c in CASE_IDS])
    second = _trial_text(
        [sample.replace("CASE", CASE_IDS[0])] + [plain.replace("CASE", c) for c in CASE_IDS[1:]]
    )
    path = tmp_path / "v.json"
    path.write_text('{"trials": [' + first + ", " + second + "]}", encoding="utf-8")
    return path


T = '{"case_id": "CASE", "output": "o", "trace": '  # a sample up to its trace
EVAL = T + '{"total_latency_ms": 5.0}}'
RUN = T + '{"run_id": "r", "spans": []}}'
# (name, the changed sample, the plain samples around it, read typed?)
TEXTS = [
    # exact sums: 10 x 1e15 + 1 + 1 is 10000000000000002 as integers, 1e16 as floats
    (
        "integer span costs summed exactly",
        T
        + '{"run_id": "r", "spans": ['
        + ", ".join(['{"estimated_cost_usd": 1000000000000000}'] * 10)
        + ', {"estimated_cost_usd": 1}, {"estimated_cost_usd": 1}]}}',
        RUN,
        True,
    ),
    (
        "duplicate case_id key: the last wins",
        '{"case_id": "x", "case_id": "CASE", "output": "o"}',
        EVAL,
        True,
    ),
    (
        "duplicate trace key: a Run after an EvalTrace",
        T + '{"total_latency_ms": 1.0}, "trace": {"run_id": "r"}}',
        EVAL,
        False,
    ),
    (
        "duplicate latency key",
        T + '{"total_latency_ms": 1.0, "total_latency_ms": 2}}',
        EVAL,
        True,
    ),
    (
        "escapes",
        '{"case_id": "CASE", "output": "\\u00e9\\ud83d\\ude42\\n\\"", '
        '"trace": {"total_latency_ms": 1E2}}',
        EVAL,
        True,
    ),
    (
        "a lone surrogate",
        '{"case_id": "CASE", "output": "\\ud800", "trace": {"total_latency_ms": 1.0}}',
        EVAL,
        False,
    ),
    (
        "null latency",
        T + '{"total_latency_ms": null}}',
        EVAL,
        False,
    ),
    ("null trace", T + "null}", EVAL, False),
    ("no trace", '{"case_id": "CASE", "output": "o"}', EVAL, True),
    ("empty trace", T + "{}}", EVAL, False),
    ("a Run among EvalTraces", RUN, EVAL, False),
    ("an EvalTrace among Runs", EVAL, RUN, False),
    (
        "spans with span_id only (quirk B6)",
        T + '{"spans": [{"span_id": "s"}]}}',
        RUN,
        False,
    ),
    (
        "run spans falsy but not a list",
        T + '{"run_id": "r", "spans": 0}}',
        RUN,
        False,
    ),
    (
        "run key null",
        T + '{"application_name": null}}',
        RUN,
        True,
    ),
    (
        "timestamps with differing offsets",
        T + '{"started_at": "2026-01-05T08:00:00Z", "completed_at": "2026-01-05T08:00:01"}}',
        RUN,
        False,
    ),
    (
        "one timestamp null",
        T + '{"started_at": "x", "completed_at": null}}',
        RUN,
        True,
    ),
    (
        "a span cost over the limit",
        T + '{"run_id": "r", "spans": [{"estimated_cost_usd": 1000000000000001}]}}',
        RUN,
        False,
    ),
    (
        "a latency over the limit",
        T + '{"total_latency_ms": 1000000000000001}}',
        EVAL,
        False,
    ),
    (
        "a numeric string",
        T + '{"total_latency_ms": "5"}}',
        EVAL,
        False,
    ),
    (
        "a deep attribute",
        T
        + '{"total_latency_ms": 1.0, "spans": [{"attributes": {"a": '
        + "[" * 3000
        + "]" * 3000
        + "}}]}}",
        EVAL,
        False,
    ),
    (
        "an integer beyond 64 bits in metadata",
        T
        + '{"total_latency_ms": 1.0, "metadata": {"turn_count": 123456789012345678901234567890}}}',
        EVAL,
        True,  # exact, as the standard parser reads it (orjson would give a float)
    ),
    (
        "the smallest int64 in metadata",
        T + '{"total_latency_ms": 1.0, "metadata": {"turn_count": -9223372036854775808}}}',
        EVAL,
        True,
    ),
    ("an unknown case", '{"case_id": "nope", "output": "o"}', EVAL, False),
]


@pytest.mark.parametrize(("name", "sample", "plain", "typed"), TEXTS, ids=[t[0] for t in TEXTS])
def test_json_text_is_read_typed_only_when_the_reference_agrees(
    tmp_path: Path, name: str, sample: str, plain: str, typed: bool
) -> None:
    path = _file_with(tmp_path, sample, plain)
    second = path.read_bytes().split(b', {"samples"', 1)[1]
    piece = b'{"samples"' + second[: second.rindex(b"]")]  # the second trial's text
    assert piece.endswith(b"]}") and piece.count(b'"case_id"') >= len(CASE_IDS)
    assert (decode_trial(piece, INDEX) is not None) == typed
    reference = _outcome(load_recorded, path)
    ours = _outcome(load_recorded_columns, path)
    if isinstance(reference, str):
        assert ours == reference
        return
    for mine, theirs in zip(ours.trials, reference.trials, strict=True):
        assert _columns_as_text(mine) == _columns_as_text(_expected(theirs))


def test_the_exact_integer_sum_is_kept(tmp_path: Path) -> None:
    path = _file_with(tmp_path, TEXTS[0][1], RUN)
    second = load_recorded_columns(path, SUITE).trials[1]
    # Independent: Python's integer sum, rounded once; the float sum would give 1e16.
    assert second.cost[0] == float(10 * 10**15 + 2) == 10000000000000002.0
    assert sum([1e15] * 10 + [1.0, 1.0]) == 1e16


def test_run_latency_is_reference_arithmetic() -> None:
    assert run_latency_ms("2026-01-05T08:00:00.000Z", "2026-01-05T08:00:01.250Z") == 1250.0
    assert run_latency_ms("2026-01-05T08:00:00+02:00", "2026-01-05T06:00:02Z") == 2000.0
    assert run_latency_ms("2026-01-05T08:00:01Z", "2026-01-05T08:00:00Z") == 0.0  # never negative
    assert run_latency_ms("2026-01-05T08:00:00Z", "2026-01-05T08:00:01") is None
    assert run_latency_ms(3, "2026-01-05T08:00:01Z") is None


def _number_text(rng: random.Random) -> str:
    """Decimal text of any length and exponent, within ±1e15 (the reference's bound)."""
    digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 25)))
    kind = rng.random()
    if kind < 0.1:
        text = digits[:15].lstrip("0") or "0"  # an integer
    else:
        text = rng.choice("0123456789") + "." + digits
        if kind < 0.7:
            text += rng.choice("eE") + rng.choice(["", "+", "-"]) + str(rng.randint(0, 14))
        else:
            text += "e-" + str(rng.randint(0, 320))  # down to subnormal numbers and 0
    return ("-" if rng.random() < 0.3 else "") + text


def test_numbers_parse_as_the_reference_parses_them(tmp_path: Path) -> None:
    # Decimal text in the float fields the typed reading decodes itself: each value must
    # be the reference parser's, bit for bit.
    rng = random.Random(11)
    trials = []
    for _ in range(200):
        samples = [
            T.replace("CASE", case_id)
            + f'{{"total_latency_ms": {_number_text(rng)}, "estimated_cost_usd": '
            + f"{_number_text(rng)}}}}}"
            for case_id in CASE_IDS
        ]
        trials.append(_trial_text(samples))
    assert all(decode_trial(text.encode(), INDEX) is not None for text in trials)
    path = tmp_path / "v.json"
    path.write_text('{"trials": [' + ", ".join(trials) + "]}", encoding="utf-8")
    reference = load_recorded(path, SUITE)
    ours = load_recorded_columns(path, SUITE)
    for mine, theirs in zip(ours.trials, reference.trials, strict=True):
        assert _columns_as_text(mine) == _columns_as_text(_expected(theirs))
