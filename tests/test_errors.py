"""The argument checks every public function shares (errors.py)."""

from __future__ import annotations

import numpy as np
import pytest

from agenticlens_frames.errors import InputError, check_count, check_number, check_proportion


@pytest.mark.parametrize("value", [0.5, np.float64(0.5), np.float32(0.5), 1, np.int64(3)])
def test_check_number_takes_python_and_numpy_reals(value):
    assert check_number(value, "x") == float(value)


@pytest.mark.parametrize("value", ["0.5", None, True, [0.5], complex(1, 0)])
def test_check_number_refuses_what_is_not_a_real_number_by_name(value):
    with pytest.raises(InputError, match=r"^where: x must be a number, got") as error:
        check_number(value, "x", location="where")
    assert error.value.location == "where"


@pytest.mark.parametrize(
    ("value", "ok"), [(0.95, True), ("0.95", False), (None, False), (1, False)]
)
def test_check_proportion_says_a_string_is_not_a_number(value, ok):
    if ok:
        assert check_proportion(value, "confidence level") == value
    else:
        with pytest.raises(InputError, match="confidence level must be"):
            check_proportion(value, "confidence level")


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        (1, True),
        (np.int64(7), True),
        (2**31 - 1, True),
        (0, False),
        (-1, False),
        (2**31, False),
        (10**20, False),
        (1.0, False),
        (True, False),
        ("3", False),
        (None, False),
    ],
)
def test_check_count(value, ok):
    if ok:
        assert check_count(value, "trials") == int(value)
    else:
        with pytest.raises(InputError, match="trials must be a whole number ≥ 1"):
            check_count(value, "trials")


def test_an_error_listing_several_problems_survives_pickling_and_naming_its_file():
    # Errors cross process boundaries (forked workers) pickled: every problem stays.
    import pickle

    problems = [
        InputError("unknown key 'trials'", location=(), hint="did you mean 'trial_count'?"),
        InputError("expected a string, got 2", location=("version",)),
    ]
    error = InputError.of_all(problems, unlisted=4)
    named = error.with_file("m.yaml")
    assert str(named).splitlines() == [
        "m.yaml: 6 problems:",
        "  m.yaml: unknown key 'trials' (did you mean 'trial_count'?)",
        "  m.yaml: version: expected a string, got 2",
        "  and 4 more, not listed (fix these and load the file again to see them)",
    ]
    copy = pickle.loads(pickle.dumps(named))
    assert str(copy) == str(named) and copy.unlisted == 4
    assert (copy.message, copy.file, copy.location, copy.hint) == (
        "unknown key 'trials'",
        "m.yaml",
        None,
        "did you mean 'trial_count'?",
    )
    assert [str(p) for p in copy.problems] == [str(p) for p in named.problems]
