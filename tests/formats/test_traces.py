"""normalize_trace: the EvalTrace shape (spec §7.2), the Run shape (§7.3) and their errors."""

from __future__ import annotations

import hashlib
import json
import math
from datetime import UTC, datetime, timedelta

import pytest

from agenticlens_frames.errors import InputError
from agenticlens_frames.formats import Trace, is_run_shaped
from agenticlens_frames.formats import normalize_trace as _normalize_trace


def normalize_trace(raw, **options):
    # These tests check the full conversion, namespaced span attributes included.
    return _normalize_trace(raw, enrich=True, **options)


def test_default_conversion_skips_only_the_namespaced_span_attributes() -> None:
    raw = {
        "run_id": "r",
        "status": "succeeded",
        "spans": [
            {
                "span_id": "s1",
                "tool_name": "search",
                "estimated_cost_usd": 0.1,
                "attributes": {"tool_args": {"q": "x"}},
                "input_data": {"q": "x"},
            },
        ],
    }
    full, lean = normalize_trace(raw), _normalize_trace(raw)
    assert lean.spans == (("search", {"tool_args": {"q": "x"}}),)
    assert full.spans[0][1]["agenticlens.span_id"] == "s1"
    for field in (
        "trace_id",
        "tool_names",
        "total_latency_ms",
        "estimated_cost_usd",
        "cost_source",
        "metadata",
        "shape",
    ):
        assert getattr(lean, field) == getattr(full, field), field


# --------------------------------------------------------------------------- EvalTrace shape


def test_empty_trace_gets_every_default():
    trace = normalize_trace({})
    assert trace == Trace("", (), (), 0.0, None, None, {}, "eval")


def test_eval_trace_fields():
    raw = {
        "trace_id": "t1",
        "spans": [
            {"tool_name": None, "attributes": {"kind": "llm"}},
            {"tool_name": "search", "attributes": {"tool_args": {"q": "x"}}},
            {"tool_name": ""},
            {"tool_name": "search", "extra": "ignored"},
        ],
        "total_latency_ms": 12,
        "estimated_cost_usd": "0.25",
        "cost_source": "measured",
        "metadata": {"turn_count": 2},
        "turn_count": 7,
        "unknown": {"keys": "are ignored"},
    }
    trace = normalize_trace(raw)
    assert trace.shape == "eval"
    assert trace.trace_id == "t1"
    assert trace.spans == (
        (None, {"kind": "llm"}),
        ("search", {"tool_args": {"q": "x"}}),
        ("", {}),
        ("search", {}),
    )
    assert trace.tool_names == ("search", "search")
    assert trace.total_latency_ms == 12.0 and type(trace.total_latency_ms) is float
    assert trace.estimated_cost_usd == 0.25
    assert trace.cost_source == "measured"
    # A top-level turn_count is ignored: only metadata.turn_count counts (§7.2).
    assert trace.metadata == {"turn_count": 2}


def test_negative_latency_and_cost_are_kept():
    # B12 is documented but not fixed: changing it would change AgenticLens' numbers.
    trace = normalize_trace({"total_latency_ms": -5, "estimated_cost_usd": -0.5})
    assert (trace.total_latency_ms, trace.estimated_cost_usd) == (-5.0, -0.5)


@pytest.mark.parametrize(
    ("raw", "location", "message"),
    [
        ({"cost_source": "guessed"}, "cost_source", "expected 'measured', 'estimated' or null"),
        ({"cost_source": "Measured"}, "cost_source", "got 'Measured'"),
        ({"total_latency_ms": "fast"}, "total_latency_ms", "expected a number, got 'fast'"),
        ({"total_latency_ms": None}, "total_latency_ms", "expected a number, got null"),
        ({"total_latency_ms": True}, "total_latency_ms", "expected a number, got true"),
        ({"total_latency_ms": math.nan}, "total_latency_ms", "expected a number, got nan"),
        ({"estimated_cost_usd": math.inf}, "estimated_cost_usd", "got inf"),
        ({"estimated_cost_usd": [1]}, "estimated_cost_usd", "got a list"),
        ({"trace_id": None}, "trace_id", "expected a string, got null"),
        ({"trace_id": 5}, "trace_id", "expected a string, got 5"),
        ({"spans": None}, "spans", "expected a list of spans, got null"),
        ({"spans": {"a": 1}}, "spans", "expected a list of spans, got a mapping"),
        ({"spans": ["search"]}, "spans[0]", "expected a span mapping, got 'search'"),
        ({"spans": [{"tool_name": 3}]}, "spans[0].tool_name", "expected a string or null"),
        ({"spans": [{}, {"attributes": None}]}, "spans[1].attributes", "expected a mapping"),
        ({"spans": [{"attributes": [1]}]}, "spans[0].attributes", "got a list"),
        ({"metadata": None}, "metadata", "expected a mapping, got null"),
        ({"metadata": {1: "a"}}, "metadata", "keys must be strings, got the key 1"),
    ],
)
def test_eval_trace_errors(raw, location, message):
    with pytest.raises(InputError) as info:
        normalize_trace(raw, file="trials/v01.json", location=("trials", 3, "samples", 17, "trace"))
    error = info.value
    assert error.file == "trials/v01.json"
    assert error.location == f"trials[3].samples[17].trace.{location}"
    assert message in error.message
    assert str(error).startswith(f"trials/v01.json: trials[3].samples[17].trace.{location}: ")


def test_not_a_mapping():
    with pytest.raises(InputError) as info:
        normalize_trace(None, file="f.json", location=("trace",))
    assert str(info.value) == "f.json: trace: expected a trace mapping, got null"


def test_error_without_file_or_location():
    with pytest.raises(InputError) as info:
        normalize_trace({"cost_source": 1})
    assert str(info.value) == "cost_source: expected 'measured', 'estimated' or null, got 1"


# --------------------------------------------------------------------------- shape detection


@pytest.mark.parametrize(
    ("raw", "run"),
    [
        ({"started_at": None}, True),
        ({"completed_at": "x"}, True),
        ({"application_name": "a"}, True),
        ({"run_id": "r"}, True),
        ({"spans": [{"span_type": "tool_call"}]}, True),
        ({"spans": [{"tool_name": "a"}, {"estimated_cost_usd": 0.1}]}, True),
        ({"spans": [{"span_id": "s"}]}, True),
        ({"run_id": "r", "total_latency_ms": 1.0}, False),
        ({"spans": [{"tool_name": "a", "attributes": {"span_id": "s"}}]}, False),
        ({"trace_id": "t", "status": "succeeded", "metadata": {}}, False),
        ({"spans": "span_id"}, False),
    ],
)
def test_run_shape_detection(raw, run):
    assert is_run_shaped(raw) is run


def test_quirk_b6_span_id_turns_an_eval_trace_into_a_run():
    # An EvalTrace without total_latency_ms whose spans carry span_id is read as a Run: its
    # trace-level cost and source are discarded (spans carry no cost, so cost is unknown).
    raw = {
        "spans": [{"tool_name": "search", "span_id": "s1"}],
        "estimated_cost_usd": 0.5,
        "cost_source": "measured",
        "metadata": {"turn_count": 1},
    }
    trace = normalize_trace(raw)
    assert trace.shape == "run"
    assert trace.estimated_cost_usd is None
    assert trace.cost_source is None
    assert trace.total_latency_ms == 0.0
    assert trace.spans == (("search", {"agenticlens.span_id": "s1"}),)
    # With total_latency_ms present the same trace keeps its cost.
    kept = normalize_trace({**raw, "total_latency_ms": 10})
    assert (kept.shape, kept.estimated_cost_usd, kept.cost_source) == ("eval", 0.5, "measured")


# --------------------------------------------------------------------------- Run shape


def _run(ms: int) -> dict:
    start = datetime(2026, 1, 5, 8, 0, 0, tzinfo=UTC)
    end = start + timedelta(milliseconds=ms)
    iso = lambda moment: moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")  # noqa: E731
    return {"run_id": "r", "started_at": iso(start), "completed_at": iso(end)}


def test_run_latency_is_not_always_whole():
    # Spec §11: timedelta.total_seconds() * 1000 turns 1001 ms into 1000.9999999999999.
    assert normalize_trace(_run(1001)).total_latency_ms == 1000.9999999999999


@pytest.mark.parametrize("ms", [1001, 1003, 2002, 4001, 1000, 1, 999, 86_400_123, 0])
def test_run_latency_from_timestamps(ms):
    # seconds as the correctly rounded quotient ms / 1000, then times 1000 in floating point.
    expected = (ms / 1000) * 1000
    latency = normalize_trace(_run(ms)).total_latency_ms
    assert latency == expected
    if ms in (1001, 1003, 2002, 4001):  # the examples spec §11 lists as not whole
        assert latency != ms


def test_reverse_timestamps_clip_to_zero():
    assert normalize_trace(_run(-250)).total_latency_ms == 0.0


def test_run_latency_needs_both_timestamps():
    only_start = {"started_at": "2026-01-05T08:00:00Z"}
    assert normalize_trace(only_start).total_latency_ms == 0.0
    # An unparseable timestamp is not read when its partner is missing (as AgenticLens).
    assert normalize_trace({"started_at": "not a time"}).total_latency_ms == 0.0


def test_run_latency_offsets_and_yaml_datetimes():
    raw = {"started_at": "2026-01-05T10:00:00+02:00", "completed_at": "2026-01-05T08:00:01.5Z"}
    assert normalize_trace(raw).total_latency_ms == 1500.0
    parsed = {
        "started_at": datetime(2026, 1, 5, 8, 0, 0, tzinfo=UTC),
        "completed_at": datetime(2026, 1, 5, 8, 0, 2, tzinfo=UTC),
    }
    assert normalize_trace(parsed).total_latency_ms == 2000.0
    naive = {"started_at": "2026-01-05T08:00:00", "completed_at": "2026-01-05T08:00:03"}
    assert normalize_trace(naive).total_latency_ms == 3000.0


@pytest.mark.parametrize(
    ("raw", "location", "message"),
    [
        (
            {"started_at": "2026-01-05T08:00:00", "completed_at": "2026-01-05T08:00:03Z"},
            "completed_at",
            "one has a UTC offset and the other does not",
        ),
        (
            {"started_at": "yesterday", "completed_at": "2026-01-05T08:00:03Z"},
            "started_at",
            "expected an ISO-8601 timestamp, got 'yesterday'",
        ),
        ({"started_at": 5, "completed_at": 6}, "started_at", "got 5"),
        ({"run_id": "r", "spans": [{"estimated_cost_usd": "0.1"}]}, "spans[0].estimated_cost_usd",
         "expected a finite number or null, got '0.1'"),
        ({"run_id": "r", "spans": [{"estimated_cost_usd": True}]}, "spans[0].estimated_cost_usd",
         "got true"),
        ({"run_id": "r", "spans": [1]}, "spans[0]", "expected a span mapping, got 1"),
        ({"run_id": "r", "spans": "abc"}, "spans", "expected a list of spans"),
        ({"run_id": "r", "spans": [{"attributes": [["a", 1]]}]}, "spans[0].attributes",
         "expected a mapping, got a list"),
        ({"run_id": "r", "metadata": ["x"]}, "metadata", "expected a mapping, got a list"),
        ({"run_id": "r", "trace_id": None}, "trace_id", "expected a string, got null"),
        ({"run_id": "r", "spans": [{"tool_name": 1}]}, "spans[0].tool_name", "got 1"),
        ({"run_id": "r", "spans": [{"input_data": {1: "a", "b": 2}}]}, "spans[0].input_data",
         "cannot be fingerprinted as JSON"),
    ],
)  # fmt: skip
def test_run_errors(raw, location, message):
    with pytest.raises(InputError) as info:
        normalize_trace(raw, file="t.yaml", location=("trace",))
    assert info.value.location == f"trace.{location}"
    assert message in info.value.message


def test_run_cost_is_a_plain_left_to_right_sum():
    costs = [0.1, 0.2, 0.3]
    raw = {"run_id": "r", "spans": [{"estimated_cost_usd": c} for c in costs]}
    expected = 0
    for cost in costs:  # Python 3.11's sum(): no compensation
        expected = expected + cost
    assert expected != math.fsum(costs)  # the order/rounding really matters here
    assert normalize_trace(raw).estimated_cost_usd == expected


def test_run_cost_rules():
    def cost(spans, **extra):
        return normalize_trace({"run_id": "r", "spans": spans, **extra}).estimated_cost_usd

    assert cost([{"estimated_cost_usd": 1}, {"estimated_cost_usd": 2}]) == 3.0
    assert type(cost([{"estimated_cost_usd": 1}])) is float
    assert cost([{"estimated_cost_usd": 0.1}, {"tool_name": "free"}]) is None
    assert cost([]) is None
    # The Run's own cost is ignored (B6).
    assert cost([], estimated_cost_usd=0.9) is None
    assert cost([{"estimated_cost_usd": 0.0}], estimated_cost_usd=0.9) == 0.0


@pytest.mark.parametrize(
    ("extra", "source"),
    [
        ({}, "estimated"),
        ({"metadata": {"cost_source": "measured"}}, "measured"),
        ({"metadata": {"cost_source": "billed"}}, "estimated"),
        ({"cost_source": "measured"}, "measured"),
        ({"cost_source": "measured", "metadata": {"cost_source": "estimated"}}, "measured"),
        # A top-level key wins even when null: AgenticLens then falls back to "estimated".
        ({"cost_source": None, "metadata": {"cost_source": "measured"}}, "estimated"),
        ({"cost_source": 3}, "estimated"),
    ],
)
def test_run_cost_source(extra, source):
    raw = {"run_id": "r", "spans": [{"estimated_cost_usd": 0.1}], **extra}
    assert normalize_trace(raw).cost_source == source


def test_run_cost_source_is_null_without_cost():
    raw = {"run_id": "r", "cost_source": "measured", "spans": [{"tool_name": "a"}]}
    assert normalize_trace(raw).cost_source is None


def _fingerprint(value) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def test_run_span_attributes():
    spans = [
        {
            "span_id": "s1",
            "parent_span_id": "s0",
            "name": "kb",
            "agent_name": "helper",
            "status": "ok",
            "span_type": "retrieval",
            "tool_name": "search",
            "input_reference": "blob-7",
            "input_data": {"ignored": True},
            "output_data": ["doc"],
            "attributes": {"agenticlens.name": "kept", "tool_args": {"q": "x"}},
            "latency_ms": 12,
            "model_name": "ignored",
        },
        {"span_type": "tool_call", "input_data": {"b": 1, "a": "é"}},
        {"span_type": "tool_call", "attributes": {"tool_args": {"z": 1, "a": 2}}},
        {"span_type": "retrieval", "input_reference": "", "output_data": None},
    ]
    trace = normalize_trace({"run_id": "r", "spans": spans})
    first = trace.spans[0][1]
    assert first == {
        "agenticlens.name": "kept",  # never overwritten
        "tool_args": {"q": "x"},
        "agenticlens.span_type": "retrieval",
        "agenticlens.agent_name": "helper",
        "agenticlens.status": "ok",
        "agenticlens.span_id": "s1",
        "agenticlens.parent_span_id": "s0",
        "agenticlens.input_fingerprint": "ref:blob-7",
        "agenticlens.retrieved": ["doc"],
    }
    assert list(first)[2:] == [  # AgenticLens' insertion order
        "agenticlens.span_type",
        "agenticlens.agent_name",
        "agenticlens.status",
        "agenticlens.span_id",
        "agenticlens.parent_span_id",
        "agenticlens.input_fingerprint",
        "agenticlens.retrieved",
    ]
    # input_data is fingerprinted but not turned into tool_args (B6).
    assert trace.spans[1][1] == {
        "agenticlens.span_type": "tool_call",
        "agenticlens.input_fingerprint": _fingerprint({"a": "é", "b": 1}),
    }
    assert trace.spans[2][1]["agenticlens.input_fingerprint"] == _fingerprint({"a": 2, "z": 1})
    assert trace.spans[3][1] == {"agenticlens.span_type": "retrieval"}
    assert spans[0]["attributes"] == {"agenticlens.name": "kept", "tool_args": {"q": "x"}}


def test_run_metadata_additions():
    raw = {
        "run_id": "r",
        "status": "failed",
        "task_success": False,
        "metadata": {"turn_count": 3, "agenticlens.run_status": "mine"},
    }
    trace = normalize_trace(raw)
    assert trace.metadata == {
        "turn_count": 3,
        "agenticlens.run_status": "mine",
        "agenticlens.task_success": False,
    }
    assert raw["metadata"] == {"turn_count": 3, "agenticlens.run_status": "mine"}
    assert normalize_trace({"run_id": "r", "metadata": None}).metadata == {}


def test_run_with_null_spans_is_empty():
    trace = normalize_trace({"run_id": "r", "spans": None, "trace_id": "t"})
    assert (trace.spans, trace.tool_names, trace.trace_id) == ((), (), "t")


def test_as_eval_dict_round_trips():
    raw = {"trace_id": "t", "spans": [{"tool_name": "a", "attributes": {"k": 1}}],
           "total_latency_ms": 5.0, "estimated_cost_usd": None, "cost_source": None,
           "metadata": {"turn_count": 1}}  # fmt: skip
    assert normalize_trace(raw).as_eval_dict() == raw
    assert normalize_trace(normalize_trace(raw).as_eval_dict()) == normalize_trace(raw)


# --------------------------------------------------------------------------- differential


def _reference(raw):
    """AgenticLens' own conversion + agentic-evals' validation, as a dict, or None on error."""
    evals = pytest.importorskip("agentic_evals")
    adapter = pytest.importorskip("agenticlens.evaluation._trace_adapter")
    try:
        return evals.EvalTrace.model_validate(adapter.to_eval_trace_dict(raw)).model_dump()
    except Exception:
        return None


def _assert_same(raw):
    expected = _reference(raw)
    if expected is None:
        with pytest.raises(InputError):
            normalize_trace(raw)
        return
    ours = normalize_trace(raw).as_eval_dict()
    assert ours == expected
    for key in ("total_latency_ms", "estimated_cost_usd"):
        assert type(ours[key]) is type(expected[key])


@pytest.mark.differential
def test_matches_agenticlens_on_generated_experiment(synthetic):
    for path in sorted((synthetic / "trials").glob("*.json")):
        document = json.loads(path.read_text())
        for trial in document["trials"]:
            for sample in trial["samples"]:
                _assert_same(sample["trace"])


@pytest.mark.differential
@pytest.mark.parametrize(
    "raw",
    [
        {},
        {"spans": [{"span_id": "s", "tool_name": "a"}], "estimated_cost_usd": 1.0},
        {"run_id": "r", "spans": [{"estimated_cost_usd": 1}, {"estimated_cost_usd": 2}]},
        {"run_id": "r", "spans": [], "cost_source": "measured"},
        {"run_id": "r", "spans": [{"estimated_cost_usd": 0.1}], "cost_source": None},
        {"run_id": "r", "spans": [{"estimated_cost_usd": 0.1}], "metadata": {"cost_source": 1}},
        {"started_at": "2026-01-05T08:00:00Z", "completed_at": "2026-01-05T08:00:01.001Z"},
        {"started_at": "2026-01-05T08:00:05Z", "completed_at": "2026-01-05T08:00:01Z"},
        {"started_at": "2026-01-05T08:00:00", "completed_at": "2026-01-05T08:00:01Z"},
        {"started_at": "2026-01-05", "completed_at": "2026-01-06"},
        {"run_id": "r", "status": "ok", "task_success": True, "metadata": {"x": 1}},
        {"run_id": "r", "spans": [{"span_type": "retrieval", "output_data": {"d": 1}}]},
        {"run_id": "r", "spans": [{"input_reference": 5}, {"input_data": [1, "a"]}]},
        {"run_id": "r", "spans": [{"attributes": {"tool_args": {"b": [1], "a": None}}}]},
        {"run_id": "r", "spans": [{"tool_name": 4}]},
        {"run_id": "r", "trace_id": None},
        {"run_id": "r", "metadata": "x"},
        {"total_latency_ms": "12.5", "estimated_cost_usd": "3"},
        {"total_latency_ms": 1, "spans": [{"tool_name": None, "attributes": None}]},
        {"total_latency_ms": 1, "cost_source": "unknown"},
        {"total_latency_ms": 1, "metadata": []},
        {"spans": None},
        {"spans": 5},
    ],
)
def test_matches_agenticlens_on_edge_cases(raw):
    _assert_same(raw)


def _trace_strategy(st, *, invalid: bool):
    """Random trace payloads mixing both shapes; with ``invalid``, also wrong values."""

    def maybe(valid, *wrong):
        return st.one_of(valid, *wrong) if invalid else valid

    numbers = maybe(
        st.integers(-(10**6), 10**6) | st.floats(-1e6, 1e6, allow_nan=False),
        st.sampled_from(["12.5", " 3 ", "1e3", "1_0", "abc", ""]),
    )
    text = st.text(max_size=4)
    json_values = st.recursive(
        st.none() | st.booleans() | st.integers(-5, 5) | text,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
        max_leaves=6,
    )
    times = maybe(
        st.sampled_from(
            [
                "2026-01-05T08:00:00Z",
                "2026-01-05T08:00:01.001Z",
                "2026-01-05T08:00:02.5+00:00",
                "2026-01-05T10:00:03+02:00",
            ]
        ),
        st.just("2026-01-05T08:00:04"),
        st.just("not a time"),
    )
    attributes = maybe(
        st.dictionaries(st.sampled_from(["tool_args", "agenticlens.name", "k"]), json_values),
        st.none(),
        st.just("xy"),
    )

    def optional(**fields):
        return st.fixed_dictionaries({}, optional=fields)

    span = maybe(
        optional(
            tool_name=maybe(st.sampled_from([None, "", "search", "lookup"]), st.just(3)),
            attributes=attributes,
            span_id=text,
            parent_span_id=st.none() | text,
            span_type=st.sampled_from(["tool_call", "retrieval", "model_call", None]),
            name=st.none() | text,
            status=st.none() | text,
            estimated_cost_usd=st.integers(0, 5) | st.floats(0, 1) | st.none(),
            input_reference=st.sampled_from([None, "", "ref-1", 7]),
            input_data=json_values,
            output_data=json_values,
        ),
        st.just("not a span"),
    )
    metadata = maybe(
        st.dictionaries(st.sampled_from(["turn_count", "cost_source", "x"]), json_values),
        st.none(),
        st.just(["truthy", "list"]),
    )
    return optional(
        trace_id=maybe(text, st.none(), st.just(1)),
        spans=maybe(st.lists(span, max_size=4), st.none(), st.just(4), st.just("s")),
        total_latency_ms=maybe(numbers, st.none()),
        estimated_cost_usd=numbers | st.none(),
        cost_source=maybe(st.sampled_from(["measured", "estimated", None]), st.just("guess")),
        metadata=metadata,
        started_at=times,
        completed_at=times,
        run_id=text,
        application_name=text,
        status=st.none() | text,
        task_success=st.none() | st.booleans(),
    )


@pytest.mark.differential
@pytest.mark.parametrize("invalid", [False, True])
def test_matches_agenticlens_on_random_traces(invalid):
    hypothesis = pytest.importorskip("hypothesis")
    strategy = _trace_strategy(hypothesis.strategies, invalid=invalid)

    @hypothesis.settings(max_examples=300, deadline=None, derandomize=True, database=None)
    @hypothesis.given(strategy)
    def check(raw):
        _assert_same(raw)

    check()
