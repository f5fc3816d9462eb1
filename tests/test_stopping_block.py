"""The checks of a saved early-stopping block (_stopping_block.py): what a refusal says."""

from __future__ import annotations

import pytest

from agenticlens_frames import _stopping_block as sb


@pytest.mark.parametrize(
    "key",
    [
        *sb._FIELDS,
        *sb._CLUSTER_FIELDS,
        *sb._CANDIDATE_FIELDS,
        *sb._SPEND_FIELDS,
        "rule_candidates",
        "paired_clusters",
        "gate_lower",
        "judge_spend_after_decision",
    ],
)
def test_every_key_a_check_can_name_has_its_expectation_in_words(key: str) -> None:
    """A key the checks can name has its own words (without them the refusal would say
    only "a valid value")."""
    said = sb.expected_at("stopping", {key: None}, [key])
    assert said.startswith("expected ") and said.endswith(", got None")
    assert "a valid value" not in said


def test_a_candidate_or_row_that_is_not_an_object_is_said_so() -> None:
    block = {"candidates": ["b"]}
    assert sb.check_block({**block}) is not None
    assert sb.expected_at("stopping", block, ["candidates", 0]) == "expected an object, got 'b'"
    assert sb.expected_at("judge_spend_failed_trials", [3], [0]) == "expected an object, got 3"
    assert sb.expected_at("stopping", [], []) == "expected an object, got []"
