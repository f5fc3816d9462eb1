"""load_manifest: AgenticLens 0.10 experiment manifests (spec §3) and our deliberate fixes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from agenticlens_frames.errors import InputError
from agenticlens_frames.formats import ManifestSpec, VariantSpec, load_manifest

from .conftest import EXPERIMENT, FIXTURES


def _variant(variant_id, **fields):
    return {
        "id": variant_id,
        "name": f"Variant {variant_id}",
        "target_kind": "recorded",
        "target": f"trials/{variant_id}.json",
        **fields,
    }


def _manifest(*variants, **top):
    if "variants" not in top:
        top["variants"] = list(variants or (_variant("a"), _variant("b"), _variant("c")))
    return {"name": "exp", "version": "1", "baseline_variant_id": "a", **top}


def _error(write, document, name="manifest.yaml") -> InputError:
    path = write(name, document)
    with pytest.raises(InputError) as info:
        load_manifest(path)
    assert info.value.file == str(path)
    return info.value


def test_fixture_manifest():
    manifest = load_manifest(EXPERIMENT / "manifest.yaml")
    folder = EXPERIMENT
    assert manifest == ManifestSpec(
        path=EXPERIMENT / "manifest.yaml",
        name="support-bot",
        version="2026.10",
        baseline_variant_id="base",
        schema_version="1.1",
        trial_count=2,
        random_seed=7,
        pass_k=(2, 1, 2),
        minimum_trials=2,
        max_workers=1,
        metadata={"owner": "evals-team"},
        comparisons={"correction": "holm"},
        variants=(
            VariantSpec(
                id="base",
                name="Baseline",
                target_kind="recorded",
                target="trials/base.json",
                resolved_target=str(folder / "trials" / "base.json"),
                factors={"model": "large", "prompt": "v1"},
            ),
            VariantSpec(
                id="small",
                name="Small model",
                target_kind="recorded",
                target="trials/small.yaml",
                resolved_target=str(folder / "trials" / "small.yaml"),
                description="Cheaper model",
                factors={"model": "small", "prompt": "v1"},
                metadata={"ticket": "EV-12"},
            ),
            VariantSpec(
                id="prompt-v2",
                name="Prompt v2",
                target_kind="recorded",
                target="trials/prompt-v2.json",
                resolved_target=str(folder / "trials" / "prompt-v2.json"),
                timeout_seconds=12.5,
                factors={"model": "large", "prompt": "v2"},
            ),
        ),
    )
    assert manifest.effective_pass_k == (1, 2)
    assert list(manifest.variants[0].factors) == ["model", "prompt"]  # insertion order


def test_defaults(write):
    manifest = load_manifest(write("m.yaml", _manifest()))
    assert (manifest.schema_version, manifest.trial_count, manifest.random_seed) == ("1.1", 5, None)
    assert (manifest.pass_k, manifest.minimum_trials, manifest.max_workers) == ((), 5, 1)
    assert (manifest.metadata, manifest.comparisons) == ({}, None)
    assert manifest.effective_pass_k == (1, 5)
    variant = manifest.variants[0]
    assert (variant.timeout_seconds, variant.description, variant.factors) == (30.0, "", {})
    assert (variant.metadata, variant.headers) == ({}, {})


def test_live_targets_and_headers():
    manifest = load_manifest(FIXTURES / "manifest_live.json")
    module, file, http = manifest.variants
    assert module.resolved_target == "my_agent.entry:run"
    # B10 fix: a python file target is taken from the manifest's folder, not the CWD.
    assert file.resolved_target == f"{FIXTURES / 'agents' / 'bot.py'}:answer"
    assert file.target == "agents/bot.py:answer"
    assert http.resolved_target == "http://localhost:8000/agent"
    assert http.headers == {"Authorization": "Bearer ${AGENT_TOKEN}"}
    assert http.timeout_seconds == 5.0 and type(http.timeout_seconds) is float


def test_path_resolution(write, tmp_path):
    absolute = str(tmp_path / "elsewhere" / "v.json")
    document = _manifest(
        _variant("a"),
        _variant("b", target=absolute),
        _variant("c", target_kind="python", target="/opt/agents/bot.py:run"),
        _variant("d", target_kind="python", target="pkg.mod:obj.attr"),
        _variant("e", target_kind="python", target="../bots/x.py:make:run"),
    )
    manifest = load_manifest(write("sub/manifest.yaml", document))
    resolved = [v.resolved_target for v in manifest.variants]
    assert resolved == [
        str(tmp_path / "sub" / "trials" / "a.json"),
        absolute,
        "/opt/agents/bot.py:run",
        "pkg.mod:obj.attr",
        "../bots/x.py:make:run",  # split at the last colon: "../bots/x.py:make" is no file
    ]


def test_relative_manifest_path_resolves_like_agenticlens(write, monkeypatch, tmp_path):
    write("m/manifest.yaml", _manifest())
    monkeypatch.chdir(tmp_path)
    manifest = load_manifest("m/manifest.yaml")
    assert manifest.variants[0].resolved_target == str(Path("m") / "trials" / "a.json")


# --------------------------------------------------------------------------- unknown keys


def test_unknown_top_level_key(write):
    error = _error(write, {**_manifest(), "trials": 2})
    assert str(error) == f"{error.file}: unknown key 'trials' (did you mean 'trial_count'?)"


@pytest.mark.parametrize(
    ("key", "suggestion"),
    [("seed", "random_seed"), ("baseline", "baseline_variant_id"), ("pass_at_k", "pass_k"),
     ("max_worker", "max_workers"), ("minimum_trial", "minimum_trials")],
)  # fmt: skip
def test_unknown_top_level_key_suggestions(write, key, suggestion):
    assert _error(write, {**_manifest(), key: 1}).hint == f"did you mean {suggestion!r}?"


def test_unknown_variant_key(write):
    document = _manifest(_variant("a"), _variant("b", timeout=5), _variant("c"))
    error = _error(write, document)
    assert str(error) == (
        f"{error.file}: variants[1]: unknown key 'timeout' (did you mean 'timeout_seconds'?)"
    )


def test_unknown_key_without_a_close_match_lists_the_keys(write):
    error = _error(write, _manifest(_variant("a", colour="red"), _variant("b"), _variant("c")))
    assert error.hint == (
        "remove it; the known keys are id, name, target_kind, target, timeout_seconds, "
        "description, factors, metadata, headers, retry, concurrency"
    )


def test_retry_and_concurrency_only_on_live_variants(write):
    live = dict(target_kind="python", target="agent:run")
    manifest = load_manifest(
        write(
            "manifest.yaml",
            _manifest(
                _variant("a", **live, retry={"attempts": 3}, concurrency=4),
                _variant("b"),
                _variant("c"),
            ),
        )
    )
    assert manifest.variants[0].retry == {"attempts": 3}
    assert manifest.variants[0].concurrency == 4
    assert manifest.variants[1].retry == {} and manifest.variants[1].concurrency is None
    error = _error(write, _manifest(_variant("a", concurrency=2), _variant("b"), _variant("c")))
    assert "concurrency applies only to live targets" in str(error)
    error = _error(
        write, _manifest(_variant("a", **live, concurrency=0), _variant("b"), _variant("c"))
    )
    assert "variants[0].concurrency" in str(error)


# --------------------------------------------------------------------------- types


def test_version_as_yaml_number(write):
    text = yaml.safe_dump(_manifest(), sort_keys=False).replace("version: '1'", "version: 2026.10")
    error = _error(write, text)
    assert str(error) == (
        f'{error.file}: version: expected a string, got 2026.1 (quote it: version: "2026.10")'
    )


def test_version_as_json_number(write):
    error = _error(write, _manifest(version=2026.1), name="manifest.json")
    assert error.hint == 'write it as a JSON string: "2026.1"'


def test_factor_must_be_a_string(write):
    text = (
        "name: exp\nversion: '1'\nbaseline_variant_id: a\nvariants:\n"
        "  - {id: a, name: A, target_kind: recorded, target: a.json}\n"
        "  - {id: b, name: B, target_kind: recorded, target: b.json}\n"
        "  - {id: c, name: C, target_kind: recorded, target: c.json, factors: {prompt: 2}}\n"
    )
    error = _error(write, text)
    assert str(error) == (
        f"{error.file}: variants[2].factors.prompt: expected a string, got 2 "
        '(quote it: prompt: "2")'
    )


def test_target_kind_is_case_sensitive(write):
    error = _error(write, _manifest(_variant("a", target_kind="Recorded"), _variant("b"),
                                    _variant("c")))  # fmt: skip
    assert error.location == "variants[0].target_kind"
    assert error.message == "expected one of 'python', 'http', 'recorded', got 'Recorded'"
    assert error.hint == "did you mean 'recorded'?"


@pytest.mark.parametrize(
    ("top", "location", "message"),
    [
        ({"name": ""}, "name", "must not be empty"),
        ({"baseline_variant_id": 1}, "baseline_variant_id", "expected a string, got 1"),
        ({"trial_count": 0}, "trial_count", "expected an integer >= 1, got 0"),
        ({"trial_count": True}, "trial_count", "expected an integer >= 1, got true"),
        ({"trial_count": 2.5}, "trial_count", "expected an integer >= 1, got 2.5"),
        ({"trial_count": None}, "trial_count", "expected an integer >= 1, got null"),
        ({"random_seed": "x"}, "random_seed", "expected an integer, got 'x'"),
        ({"pass_k": 1}, "pass_k", "expected a list, got 1"),
        ({"pass_k": [1, "a"]}, "pass_k[1]", "expected an integer, got 'a'"),
        ({"minimum_trials": 0}, "minimum_trials", "expected an integer >= 1, got 0"),
        ({"max_workers": -1}, "max_workers", "expected an integer >= 1, got -1"),
        ({"metadata": {"a": 1}}, "metadata.a", "expected a string, got 1"),
        ({"metadata": None}, "metadata", "expected a mapping, got null"),
        ({"comparisons": [1]}, "comparisons", "expected a mapping, got a list"),
        ({"variants": None}, "variants", "expected a list, got null"),
        ({"schema_version": 1.1}, "schema_version", "expected a string, got 1.1"),
    ],
)
def test_top_level_type_errors(write, top, location, message):
    error = _error(write, _manifest(**top))
    assert (error.location, error.message) == (location, message)


@pytest.mark.parametrize(
    ("fields", "location", "message"),
    [
        ({"id": ""}, "variants[1].id", "must not be empty"),
        ({"name": None}, "variants[1].name", "expected a string, got null"),
        ({"target": ""}, "variants[1].target", "must not be empty"),
        ({"timeout_seconds": 0}, "variants[1].timeout_seconds", "expected a number > 0, got 0"),
        ({"timeout_seconds": ".inf"}, "variants[1].timeout_seconds", "got '.inf'"),
        ({"timeout_seconds": float("inf")}, "variants[1].timeout_seconds", "got inf"),
        ({"description": 3}, "variants[1].description", "expected a string, got 3"),
        ({"factors": ["a"]}, "variants[1].factors", "expected a mapping, got a list"),
        ({"factors": {"m": None}}, "variants[1].factors.m", "expected a string, got null"),
        ({"factors": {1: "x"}}, "variants[1].factors", "keys must be strings, got the key 1"),
        ({"metadata": {"k": True}}, "variants[1].metadata.k", "expected a string, got true"),
        ({"headers": {"X-Key": "v"}}, "variants[1].headers",
         "headers apply only to http targets; variant 'b' is recorded"),
        ({"target_kind": "python", "target": "agent"}, "variants[1].target",
         "python targets are 'module:function' or 'path/to/file.py:function', got 'agent'"),
        ({"target_kind": "python", "target": "mod:"}, "variants[1].target", "got 'mod:'"),
        ({"target_kind": "http", "target": "localhost:8000"}, "variants[1].target",
         "http targets must be http:// or https:// URLs, got 'localhost:8000'"),
        ({"target_kind": "http", "target": "https://x", "headers": {"Bad Name": "v"}},
         "variants[1].headers", "'Bad Name' is not a valid HTTP header name"),
        ({"target_kind": "http", "target": "https://x", "headers": {"A": 1}},
         "variants[1].headers.A", "expected a string, got 1"),
        # was sent as written: unauthenticated calls, counted as the agent's failures
        ({"target_kind": "http", "target": "https://x",
          "headers": {"Authorization": "Bearer ${AGENT_TOKEN"}},
         "variants[1].headers.Authorization", "'${' starts no ${NAME} reference"),
        ({"target_kind": "http", "target": "https://x", "headers": {"X": "${1KEY}"}},
         "variants[1].headers.X", "'${' starts no ${NAME} reference"),
        # failed every call as a "connection" error
        ({"target_kind": "http", "target": "https://x", "headers": {"X": "a\nInjected: 1"}},
         "variants[1].headers.X", "a header value cannot hold a line break"),
    ],
)  # fmt: skip
def test_variant_type_errors(write, fields, location, message):
    document = _manifest(_variant("a"), _variant("b", **fields), _variant("c"))
    error = _error(write, document)
    assert error.location == location
    assert message in error.message


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("http://bot:pw-4f9a1c@127.0.0.1:99999/agent", "not a valid URL (Port out of range"),
        ("http://bot:pw-4f9a1c@[::1/agent", "not a valid URL (Invalid IPv6 URL)"),
        ("ftp://bot:pw-4f9a1c@127.0.0.1/agent", "http targets must be http:// or https://"),
    ],
)
def test_an_invalid_url_is_named_without_its_password(write, target, message):
    """The error quoted the target as written, basic-auth password included."""
    document = _manifest(_variant("a"), _variant("b", target_kind="http", target=target))
    error = _error(write, document)
    assert error.location == "variants[1].target" and message in error.message
    assert "pw-4f9a1c" not in str(error)
    assert target.replace("pw-4f9a1c", "***") in error.message


def test_missing_keys(write):
    nameless = _manifest()
    del nameless["name"]
    error = _error(write, nameless)
    assert str(error) == f"{error.file}: missing required key 'name'"
    variant = _variant("b")
    del variant["target"]
    error = _error(write, _manifest(_variant("a"), variant, _variant("c")))
    assert str(error) == f"{error.file}: variants[1]: missing required key 'target'"


def test_null_for_a_defaulted_key_says_how_to_get_the_default(write):
    error = _error(write, _manifest(minimum_trials=None))
    assert error.hint == "remove the key to use the default"


def test_top_level_must_be_a_mapping(write):
    error = _error(write, "- a\n- b\n")
    assert error.message == "expected a mapping of manifest fields at the top level, got a list"


@pytest.mark.parametrize(
    ("top", "expected"),
    [
        ({"trial_count": "3"}, 3),
        ({"trial_count": 3.0}, 3),
        ({"trial_count": " 4 "}, 4),
    ],
)
def test_pydantic_coercions_are_kept(write, top, expected):
    assert load_manifest(write("m.yaml", _manifest(**top))).trial_count == expected


def test_random_seed_zero_and_negative(write):
    assert load_manifest(write("m.yaml", _manifest(random_seed=0))).random_seed == 0
    assert load_manifest(write("m.yaml", _manifest(random_seed=-3))).random_seed == -3


def test_comparisons_are_kept_as_written(write):
    comparisons = {"correction": "holm", "metrics": ["pass_rate"], "alpha": 0.05}
    manifest = load_manifest(write("m.yaml", _manifest(comparisons=comparisons)))
    assert manifest.comparisons == comparisons
    assert load_manifest(write("m.yaml", _manifest(comparisons=None))).comparisons is None


# --------------------------------------------------------------------------- model-level rules


def test_at_least_three_variants(write):
    error = _error(write, _manifest(_variant("a"), _variant("b")))
    assert str(error) == (
        f"{error.file}: variants: experiment manifests require at least three variants "
        "(found 2; add variants so that a baseline and at least two candidates are compared)"
    )


def test_duplicate_variant_ids_name_both_positions(write):
    error = _error(write, _manifest(_variant("a"), _variant("b"), _variant("c"), _variant("b")))
    assert str(error) == (
        f"{error.file}: variants[3].id: experiment variant IDs must be unique "
        "('b' is also the id of variants[1])"
    )


def test_baseline_must_be_a_variant(write):
    error = _error(write, _manifest(baseline_variant_id="A"))
    assert str(error) == (
        f"{error.file}: baseline_variant_id: baseline_variant_id must reference a defined "
        "variant (did you mean 'a'? 'A' is not one of the variant ids 'a', 'b', 'c')"
    )


@pytest.mark.parametrize("pass_k", [[0], [1, 6], [-1]])
def test_pass_k_within_trial_count(write, pass_k):
    error = _error(write, _manifest(pass_k=pass_k, trial_count=5))
    assert error.location == f"pass_k[{len(pass_k) - 1}]"
    assert error.message == "pass_k values must be between 1 and trial_count"
    assert error.hint == f"got {pass_k[-1]} with trial_count 5"


def test_model_rules_run_in_agenticlens_order(write):
    # Two variants, a duplicate, an unknown baseline and a bad k: the count is reported.
    document = _manifest(_variant("a"), _variant("a"), baseline_variant_id="z", pass_k=[9])
    assert "at least three variants" in _error(write, document).message
    document = _manifest(_variant("a"), _variant("a"), _variant("c"), baseline_variant_id="z",
                         pass_k=[9])  # fmt: skip
    assert "must be unique" in _error(write, document).message
    document = _manifest(baseline_variant_id="z", pass_k=[9])
    assert "baseline_variant_id must reference" in _error(write, document).message
    # Field errors come before every model-level rule.
    document = _manifest(_variant("a"), max_workers=0)
    assert _error(write, document).location == "max_workers"


# --------------------------------------------------------------------------- every problem at once

# Three independent mistakes, each as a change to a valid manifest's YAML text.
_TYPO = ("trial_count: 5", "trials: 5")
_NUMBER = ("version: '1'", "version: 2026.10")
_KIND = (
    "target_kind: recorded\n  target: trials/c.json",
    "target_kind: record\n  target: trials/c.json",
)


def _text(*changes: tuple[str, str]) -> str:
    text = yaml.safe_dump(_manifest(trial_count=5), sort_keys=False)
    for old, new in changes:
        assert old in text
        text = text.replace(old, new)
    return text


def test_every_independent_problem_is_reported_at_once(write):
    # Each alone, then all three in the same file: one error, each problem on its line
    # worded exactly as alone; the error's place and fix are the first problem's.
    alone = [_error(write, _text(change)) for change in (_TYPO, _NUMBER, _KIND)]
    error = _error(write, _text(_TYPO, _NUMBER, _KIND))
    assert str(error) == "\n".join(
        [f"{error.file}: 3 problems:", *(f"  {problem}" for problem in alone)]
    )
    assert [str(problem) for problem in error.problems] == [str(p) for p in alone]
    assert alone[2].location == "variants[2].target_kind"
    first = alone[0]
    assert (error.message, error.location, error.hint) == (
        first.message,
        first.location,
        first.hint,
    )
    assert error.unlisted == 0


def test_one_problem_gives_the_error_it_gave_alone(write):
    # Not a list of one: the message is byte for byte what loading stopped at before.
    error = _error(write, _text(_NUMBER))
    assert str(error) == (
        f'{error.file}: version: expected a string, got 2026.1 (quote it: version: "2026.10")'
    )
    assert error.problems == () and error.unlisted == 0


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        # No variants to check the count or the baseline against.
        ({**_manifest(), "variants": "abc", "baseline_variant_id": "z"}, "variants: expected"),
        # A baseline that may be the id that could not be read.
        (_manifest(_variant(5), _variant("b"), _variant("c")), "variants[0].id: expected"),
        # pass_k against a trial_count that could not be read.
        (_manifest(trial_count="five", pass_k=[1, 9]), "trial_count: expected"),
        # Headers on a variant whose kind could not be read, or of the wrong kind.
        (_manifest(_variant("a", target_kind="htp", headers={"X": "1"}), _variant("b"),
                   _variant("c")), "variants[0].target_kind"),
        (_manifest(_variant("a", headers={"X Y": "1"}), _variant("b"), _variant("c")),
         "headers apply only to http targets"),
        # A live-only key whose value is wrong, on a recorded variant.
        (_manifest(_variant("a", concurrency=0), _variant("b"), _variant("c")),
         "variants[0].concurrency: expected"),
    ],
)  # fmt: skip
def test_checks_that_depend_on_a_refused_value_are_not_reported(write, document, expected):
    error = _error(write, document)
    assert error.problems == (), str(error)
    assert expected in str(error)


def test_a_misspelt_required_key_is_one_problem(write):
    document = _manifest()
    document["nmae"] = document.pop("name")
    error = _error(write, document)
    assert str(error) == f"{error.file}: unknown key 'nmae' (did you mean 'name'?)"


# --------------------------------------------------------------------------- differential


def _reference(path):
    runner = pytest.importorskip("agenticlens.experiments.runner")
    return runner.load_manifest(Path(path))


def _assert_same(path) -> None:
    theirs = _reference(path)
    ours = load_manifest(path)
    for key in ("schema_version", "name", "version", "baseline_variant_id", "trial_count",
                "random_seed", "minimum_trials", "max_workers", "metadata"):  # fmt: skip
        assert getattr(ours, key) == getattr(theirs, key), key
    assert list(ours.pass_k) == theirs.pass_k
    assert list(ours.effective_pass_k) == theirs.resolved_pass_k()
    for our, their in zip(ours.variants, theirs.variants, strict=True):
        for key in ("id", "name", "target_kind", "timeout_seconds", "description", "factors",
                    "metadata"):  # fmt: skip
            assert getattr(our, key) == getattr(their, key), key
        if our.target_kind == "recorded":
            assert our.resolved_target == their.target  # AgenticLens rewrites the target
        else:
            assert our.target == their.target


@pytest.mark.differential
def test_matches_agenticlens_on_fixtures():
    _assert_same(EXPERIMENT / "manifest.yaml")
    _assert_same(FIXTURES / "manifest_live.json")


@pytest.mark.differential
def test_matches_agenticlens_on_generated_manifest(synthetic):
    _assert_same(synthetic / "manifest.yaml")


# (changes to a valid manifest, does AgenticLens refuse it on purpose-compatible grounds?)
_DOCUMENTED_REFUSALS = {"bool-int", "unknown-key", "inf-timeout", "bad-python-target"}


@pytest.mark.differential
@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        ({"trial_count": "3", "pass_k": [1, "2"]}, None),
        ({"random_seed": 3.0, "minimum_trials": "2"}, None),
        ({"version": ""}, None),
        ({"version": 1}, None),
        ({"trial_count": 0}, None),
        ({"trial_count": 2.5}, None),
        ({"pass_k": [0]}, None),
        ({"pass_k": [6]}, None),
        ({"baseline_variant_id": "x"}, None),
        ({"metadata": {"a": 1}}, None),
        ({"variants": [_variant("a"), _variant("b")]}, None),
        ({"variants": [_variant("a"), _variant("a"), _variant("c")]}, None),
        ({"variants": [_variant("a", factors={"m": 2}), _variant("b"), _variant("c")]}, None),
        ({"variants": [_variant("a", timeout_seconds="5"), _variant("b"), _variant("c")]}, None),
        ({"variants": [_variant("a", target_kind="HTTP"), _variant("b"), _variant("c")]}, None),
        ({"variants": [_variant("a", id=""), _variant("b"), _variant("c")]}, None),
        ({"trial_count": True}, "bool-int"),
        ({"trials": 2}, "unknown-key"),
        ({"variants": [_variant("a", timeout_seconds=1e400), _variant("b"), _variant("c")]},
         "inf-timeout"),
        ({"variants": [_variant("a", target_kind="python", target="agent"), _variant("b"),
                       _variant("c")]}, "bad-python-target"),
    ],
)  # fmt: skip
def test_accepts_and_refuses_what_agenticlens_does(write, change, refusal):
    path = write("manifest.json", _manifest(**change))
    if refusal is not None:
        assert refusal in _DOCUMENTED_REFUSALS
        _reference(path)  # AgenticLens accepts it...
        with pytest.raises(InputError):  # ...we refuse it on purpose
            load_manifest(path)
        return
    try:
        _reference(path)
    except ValueError:
        with pytest.raises(InputError):
            load_manifest(path)
        return
    _assert_same(path)


def test_json_and_yaml_give_the_same_manifest(write):
    document = _manifest(trial_count=3, pass_k=[1, 3], metadata={"a": "b"})
    from_json = load_manifest(write("m.json", json.dumps(document)))
    from_yaml = load_manifest(write("m.yaml", document))
    assert from_json.variants == from_yaml.variants
    assert (from_json.trial_count, from_json.pass_k) == (from_yaml.trial_count, from_yaml.pass_k)
