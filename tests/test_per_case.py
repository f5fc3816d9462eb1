"""Helpers of the case matrix's module: category codes and labels against naive loops."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from agenticlens_frames.per_case import category_codes, category_labels


@pytest.mark.parametrize("arrow", [False, True])
def test_category_codes_equal_pandas_codes_of_the_text(arrow: bool) -> None:
    rng = np.random.default_rng(3)
    categories = ["zz", "b", "a", "q", "case-10", "case-9"]
    values = [categories[i] for i in rng.integers(0, len(categories), 200)] + [None]
    column = pd.Series(pd.Categorical(values, categories=categories))
    if arrow:
        column = column.astype(pd.CategoricalDtype(pd.Index(categories, dtype="string[pyarrow]")))
    for labels in (["a", "b"], ["case-9", "zz", "a", "b", "q", "case-10"], []):
        np.testing.assert_array_equal(category_codes(column, labels), _naive(column, labels))
    plain = pd.Series([v for v in values if v is not None])
    np.testing.assert_array_equal(category_codes(plain, ["a", "b"]), _naive(plain, ["a", "b"]))


def _naive(column: pd.Series, labels: list[str]) -> list[int]:
    # One row at a time: the row's text looked up in labels, -1 if missing or absent.
    return [-1 if pd.isna(v) or str(v) not in labels else labels.index(str(v)) for v in column]


def test_category_labels_are_the_text_of_each_category() -> None:
    for index in (
        pd.Index(["x", "y"], dtype="string[pyarrow]"),
        pd.Index([3, 1, 2]),
        pd.Index([0.5, 2.0]),
        pd.Index(["a", 1], dtype=object),
    ):
        assert category_labels(index) == [str(v) for v in index]
