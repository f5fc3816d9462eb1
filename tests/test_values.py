"""agenticlens_frames._values: JSON copies of live payloads and judge metadata."""

from __future__ import annotations

from typing import Any

import pytest

from agenticlens_frames._values import json_copy, json_copy_checked, json_key_clash, same_json

VALUES: list[Any] = [
    {"output": "x", "trace": {"spans": [{"tool_name": "a"}]}},
    {"output": "x", "spans": ({"t": 1},)},
    {"n": float("nan"), "i": float("inf"), "big": 2**70},
    {1: "a", "2": {"x": [{None: 0, "null": 1}]}},
    {1: "a", "1": "b"},
    {True: 1, "true": 2},
    {1: "a", 2: "b", "3": (1.0, {"1.0": 0})},
    {"set": {1, 2}, "nested": [[[]]]},
    [1, "two", None, 3.5],
    "text",
]


@pytest.mark.parametrize("value", VALUES)
def test_json_copy_checked_is_json_copy_and_json_key_clash(value: Any) -> None:
    # One orjson pass for both: the same copy and the same clash as the two functions apart.
    copied, clash = json_copy_checked(value)
    assert same_json(copied, json_copy(value))
    assert clash == json_key_clash(value)


def test_json_copy_checked_raises_what_json_copy_raises() -> None:
    for bad in ({(1, 2): "pair"},):
        with pytest.raises(TypeError) as apart:
            json_copy(bad)
        with pytest.raises(TypeError) as together:
            json_copy_checked(bad)
        assert str(together.value) == str(apart.value)
