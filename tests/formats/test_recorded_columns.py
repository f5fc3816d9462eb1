"""load_recorded_columns / iter_json_list: replay's column-wise reading of recorded files.

The reference is :func:`load_recorded` (one normalised :class:`Trace` per sample, itself
checked against the real package): on awkward generated files, in both trace shapes, with
missing samples, unicode, integers where floats usually are and numbers the fast path
does not take, every complete trial's columns must equal the reference traces' fields,
every incomplete trial must be the reference's samples, and every bad file must raise the
reference's error, word for word. The JSON pieces are checked against a whole-document
parse, including layouts and strings built to fool the cutting. Files whose trials are
all EvalTraces or all Runs exercise the typed (msgspec) reading of
``formats/_recorded_typed.py``; ``test_recorded_typed.py`` has its edge cases.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pytest

from agenticlens_frames.errors import InputError
from agenticlens_frames.formats import load_recorded, read_document
from agenticlens_frames.formats._io import iter_json_list
from agenticlens_frames.formats.model import CaseSpec, SuiteSpec
from agenticlens_frames.formats.recorded import TrialColumns, load_recorded_columns

from ..conftest import counting_forks

CASE_IDS = ("refund", "straße-7", "order 42", "日本語", "emoji-🙂")
SUITE = SuiteSpec(
    Path("suite.yaml"), "s", "1", tuple(CaseSpec(c, c, i) for i, c in enumerate(CASE_IDS))
)


def _eval_trace(rng: random.Random) -> dict:
    trace: dict = {"total_latency_ms": rng.choice([12.5, 0.0, 3000.0, 7, -0.0, 1e15])}
    if rng.random() < 0.8:
        trace["trace_id"] = rng.choice(["t-1", "", "ид-🙂"])
    if rng.random() < 0.8:
        trace["spans"] = [
            {
                "tool_name": rng.choice(["search", None, "", "poiščí"]),
                **({"attributes": {"tool_args": {"q": "x"}}} if rng.random() < 0.5 else {}),
            }
            for _ in range(rng.randint(0, 3))
        ]
    cost = rng.choice([None, 0.0012, 2, "0.5", 1e-9])
    if cost is not None or rng.random() < 0.3:
        trace["estimated_cost_usd"] = cost
    if rng.random() < 0.6:
        trace["cost_source"] = rng.choice(["measured", "estimated", None])
    if rng.random() < 0.7:
        trace["metadata"] = {"turn_count": rng.choice([1, 3, True, 2.0, "3", 0, None])}
    return trace


def _run_trace(rng: random.Random) -> dict:
    start = rng.choice(["2026-01-05T08:00:00.000Z", "2026-01-05T08:00:00+02:00"])
    end = rng.choice(["2026-01-05T08:00:01.250Z", "2026-01-05T07:59:59Z", "2026-01-05T08:00:02"])
    trace: dict = {
        "run_id": "r",
        "started_at": start,
        "completed_at": end,
        "spans": [
            {
                "span_id": f"s{i}",
                "tool_name": rng.choice(["search", None, "refund"]),
                "estimated_cost_usd": rng.choice([0.001, 0.0, None, 3]),
                **({"attributes": rng.choice([None, {"k": "v"}])} if rng.random() < 0.5 else {}),
            }
            for i in range(rng.randint(0, 3))
        ],
    }
    if rng.random() < 0.3:
        trace["cost_source"] = rng.choice(["measured", None, "guessed"])
    if rng.random() < 0.7:
        trace["metadata"] = rng.choice(
            [{"turn_count": 2}, {"cost_source": "measured"}, None, {"turn_count": True}]
        )
    if rng.random() < 0.3:
        trace["status"] = "succeeded"
    return trace


def _sample(rng: random.Random, case_id: str, shape: str = "mixed") -> dict:
    """A sample whose trace is of either shape (``mixed``), or only EvalTraces and absent
    traces (``eval``), or only Runs (``run``): the layouts read typed when all is plain."""
    sample: dict = {"case_id": case_id, "output": rng.choice(["ok", "", "Straße ✓", " x\n"])}
    kind = {"mixed": rng.random(), "eval": rng.choice([0.0, 0.0, 0.0, 0.99]), "run": 0.5}[shape]
    if kind < 0.45:
        sample["trace"] = _eval_trace(rng)
    elif kind < 0.9:
        sample["trace"] = _run_trace(rng)
    elif kind < 0.95:
        sample["trace"] = {"spans": [{"span_id": "s", "tool_name": "t"}]}  # quirk B6: a Run
    if rng.random() < 0.1:
        sample["note"] = "ignored"
    return sample


def _document(rng: random.Random, shape: str = "mixed") -> dict:
    trials = []
    for _ in range(rng.randint(1, 4)):
        ids = list(CASE_IDS)
        rng.shuffle(ids)
        if rng.random() < 0.3:  # a missing sample: the trial is kept as samples
            ids.pop()
        samples = [_sample(rng, case_id, shape) for case_id in ids]
        trials.append({"samples": samples} if rng.random() < 0.7 else samples)
    return {"variant_id": "v", "trials": trials}


def _expected(trial: tuple[dict, ...]) -> TrialColumns:
    columns = TrialColumns.empty()
    for sample in trial:
        columns.append(CASE_IDS.index(sample["case_id"]), sample["output"], sample["trace"])
    return columns


def _outcome(load, path: Path):
    try:
        return load(path, SUITE)
    except InputError as exc:
        return str(exc)


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("suffix", [".json", ".yaml"])
@pytest.mark.parametrize("shape", ["mixed", "eval", "run"])
def test_columns_equal_the_reference_traces(
    tmp_path: Path, seed: int, suffix: str, shape: str
) -> None:
    rng = random.Random(seed)
    path = tmp_path / f"v{suffix}"
    document = _document(rng, shape)
    if suffix == ".json":
        path.write_text(json.dumps(document, ensure_ascii=rng.random() < 0.5), encoding="utf-8")
    else:
        import yaml

        path.write_text(yaml.safe_dump(document, allow_unicode=True), encoding="utf-8")
    reference = _outcome(load_recorded, path)
    ours = _outcome(load_recorded_columns, path)
    if isinstance(reference, str):  # e.g. a "guessed" cost source, a numeric string
        assert ours == reference
        return
    assert not isinstance(ours, str), ours
    assert len(ours.trials) == len(reference.trials)
    for mine, theirs in zip(ours.trials, reference.trials, strict=True):
        if len(theirs) == len(CASE_IDS):
            assert isinstance(mine, TrialColumns)
            expected = _expected(theirs)
            for name in TrialColumns.__slots__:
                got, want = getattr(mine, name), getattr(expected, name)
                # repr: -0.0 and 0.0, True and 1 must not pass for each other
                assert [repr(v) for v in got] == [repr(v) for v in want], name
            ordered = mine.in_case_order()
            assert ordered.case_index == list(range(len(CASE_IDS)))
            assert sorted(zip(ordered.case_index, ordered.output, strict=True)) == sorted(
                zip(mine.case_index, mine.output, strict=True)
            )
        else:
            assert mine == theirs


def _bad_documents() -> list[tuple[str, object]]:
    good = [{"case_id": c, "output": "x", "trace": {"total_latency_ms": 1.0}} for c in CASE_IDS]
    cases: list[tuple[str, object]] = [
        ("top level list", [good]),
        ("no trials", {"variant_id": "v"}),
        ("empty trials", {"trials": []}),
        ("trial not a list", {"trials": [{"samples": None}]}),
    ]
    edits = {
        "sample not a mapping": lambda s: "refund",
        "no case id": lambda s: {k: v for k, v in s.items() if k != "case_id"},
        "case id a number": lambda s: {**s, "case_id": 7},
        "unknown case id": lambda s: {**s, "case_id": "refnd"},
        "repeated case id": lambda s: {
            **s,
            "case_id": CASE_IDS[-1] if s["case_id"] == CASE_IDS[0] else CASE_IDS[0],
        },
        "no output": lambda s: {k: v for k, v in s.items() if k != "output"},
        "output a list": lambda s: {**s, "output": ["a"]},
        "null trace": lambda s: {**s, "trace": None},
        "trace a list": lambda s: {**s, "trace": []},
        "latency a string": lambda s: {**s, "trace": {"total_latency_ms": "fast"}},
        "latency a bool": lambda s: {**s, "trace": {"total_latency_ms": True}},
        "latency too large": lambda s: {**s, "trace": {"total_latency_ms": 1e300}},
        "cost source unknown": lambda s: {
            **s,
            "trace": {"total_latency_ms": 1.0, "estimated_cost_usd": 1.0, "cost_source": "x"},
        },
        "spans a mapping": lambda s: {**s, "trace": {"total_latency_ms": 1.0, "spans": {}}},
        "span not a mapping": lambda s: {**s, "trace": {"total_latency_ms": 1.0, "spans": [1]}},
        "tool name a number": lambda s: {
            **s,
            "trace": {"total_latency_ms": 1.0, "spans": [{"tool_name": 3}]},
        },
        "attributes null": lambda s: {
            **s,
            "trace": {"total_latency_ms": 1.0, "spans": [{"attributes": None}]},
        },
        "metadata a list": lambda s: {**s, "trace": {"total_latency_ms": 1.0, "metadata": []}},
        "run timestamp bad": lambda s: {
            **s,
            "trace": {"started_at": "yesterday", "completed_at": "2026-01-05T08:00:00Z"},
        },
        "run offsets differ": lambda s: {
            **s,
            "trace": {"started_at": "2026-01-05T08:00:00Z", "completed_at": "2026-01-05T08:00:01"},
        },
        "run span cost a string": lambda s: {
            **s,
            "trace": {"run_id": "r", "spans": [{"estimated_cost_usd": "1"}]},
        },
        "run attributes a list": lambda s: {
            **s,
            "trace": {"run_id": "r", "spans": [{"attributes": []}]},
        },
        "run metadata a string": lambda s: {**s, "trace": {"run_id": "r", "metadata": "m"}},
    }
    for name, edit in edits.items():
        for position in (0, 3):
            samples = copy.deepcopy(good)
            samples[position] = edit(samples[position])
            cases.append((f"{name} at {position}", {"trials": [good, {"samples": samples}]}))
    return cases


@pytest.mark.parametrize(("name", "document"), _bad_documents(), ids=lambda v: str(v)[:30])
@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_bad_files_raise_the_reference_error(
    tmp_path: Path, name: str, document: object, suffix: str
) -> None:
    path = tmp_path / f"v{suffix}"
    path.write_text(json.dumps(document), encoding="utf-8")  # JSON is YAML too
    reference = _outcome(load_recorded, path)
    assert isinstance(reference, str), name
    assert _outcome(load_recorded_columns, path) == reference


# --------------------------------------------------------------------------- JSON pieces

ELEMENT = b'{"samples":'


def _pieces_or_whole(path: Path) -> object:
    try:
        pieces = iter_json_list(path, "trials", ELEMENT, lambda: read_document(path)["trials"])
        return None if pieces is None else list(pieces)
    except InputError as exc:
        return str(exc)


def _whole(path: Path) -> object:
    try:
        return read_document(path)["trials"]
    except InputError as exc:
        return str(exc)


TRICKY = [
    # strings that look like the cut
    '{"trials": [{"samples": ["},{\\"samples\\":["]}, {"samples": [1]}]}',
    # a nested "samples" key after a comma: a false cut, then the whole document
    '{"trials": [{"samples": [{"a": 1}, {"samples": 2}]}, {"samples": []}]}',
    # pretty-printed, keys after the list, unicode
    json.dumps(
        {"variant_id": "ü", "trials": [{"samples": ["é"]}, {"samples": []}], "z": {"trials": 1}},
        indent=2,
        ensure_ascii=False,
    ),
    # a duplicate key: the later value wins, as in the whole document
    '{"trials": [{"samples": [1]}], "trials": [{"samples": [2]}, {"samples": [3]}]}',
    '{"trials": [{"samples": [1]}, {"samples": [2]}], "trials": []}',
    '{"trials": [{"samples": [1]}, {"samples": [2]}], "tri\\u0061ls": [{"samples": [3]}]}',
    '{"trials": [{"samples": [1]}, {"samples": [2]}], "trials": "x", "y": [1]}',
    '{"trials": [{"samples": [1]}, {"samples": [2]}], "y": [{"samples": [3]}]}',
    # the key inside a string before the real one
    '{"note": "\\"trials\\": [x", "trials": [{"samples": [1]}, {"samples": [2]}]}',
    # NaN (only the standard parser takes it), a big integer, bare lists, an empty list
    '{"trials": [{"samples": [NaN]}, {"samples": [1]}]}',
    '{"trials": [{"samples": [1]}, {"samples": [123456789012345678901234567890]}]}',
    '{"trials": [[1], [2]]}',
    '{"trials": [ ]}',
    # broken documents: the reference error
    '{"trials": [{"samples": [1]}, {"samples": [2}]}',
    '{"trials": [{"samples": [1]}, {"samples": [2]}]} x',
    '\ufeff{"trials": [{"samples": [1]}, {"samples": [2]}]}',
]


@pytest.mark.parametrize("text", TRICKY)
def test_pieces_are_the_whole_documents_items(tmp_path: Path, text: str) -> None:
    path = tmp_path / "v.json"
    path.write_text(text, encoding="utf-8")
    whole = _whole(path)
    ours = _pieces_or_whole(path)
    if ours is not None:  # None: not this layout, the caller reads the whole document
        assert ours == whole


def test_pieces_of_a_generated_file_are_parsed_one_by_one(tmp_path: Path) -> None:
    rng = random.Random(5)
    document = {"variant_id": "v", "trials": [{"samples": [_sample(rng, c) for c in CASE_IDS]}]}
    document["trials"] *= 3
    path = tmp_path / "v.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    pieces = iter_json_list(path, "trials", ELEMENT, lambda: pytest.fail("read whole"))
    assert pieces is not None
    assert list(pieces) == document["trials"]


# --------------------------------------------------------------------------- large YAML


def _read_large_yaml(path: Path, workers: str) -> tuple[object, int]:
    """read_document with ``workers`` (``1``: no forking); also how many processes forked."""
    document, forks = counting_forks(workers, read_document, path)
    return (str(document) if isinstance(document, InputError) else document), forks


def test_large_yaml_parsed_apart_is_the_same(tmp_path: Path, isolated) -> None:
    # A block scalar: outside the plain subset read line by line, so PyYAML parses it.
    lines = ["name: big", "description: |", "  read by PyYAML", "cases:"]
    lines += [
        f'  - {{id: "c{i}", input: {{q: "ünï {i}"}}, n: {i}, x: 1.5e+3, t: 2026-01-05, ok: yes}}'
        for i in range(16_000)
    ]
    path = tmp_path / "suite.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert path.stat().st_size > 1 << 20
    apart, forks = isolated(_read_large_yaml, path, "2")
    here, no_forks = isolated(_read_large_yaml, path, "1")
    assert (forks, no_forks) == (1, 0)
    assert apart == here
    assert apart["cases"][7] == {
        "id": "c7",
        "input": {"q": "ünï 7"},
        "n": 7,
        "x": 1500.0,
        "t": __import__("datetime").date(2026, 1, 5),
        "ok": True,
    }
    # In the plain subset, the same document is read here (it holds no node graph).
    path.write_text("\n".join(lines[:1] + lines[3:]) + "\n", encoding="utf-8")
    plain, plain_forks = isolated(_read_large_yaml, path, "2")
    assert plain_forks == 0
    assert plain == {k: v for k, v in apart.items() if k != "description"}
    # A syntax error near the end: the same message, line and column, either way.
    path.write_text("\n".join([*lines, "  - {id: [unclosed"]) + "\n", encoding="utf-8")
    apart, _ = isolated(_read_large_yaml, path, "2")
    here, _ = isolated(_read_large_yaml, path, "1")
    assert isinstance(apart, str) and apart == here
    assert f"line {len(lines) + 2}, column 1" in apart, apart
