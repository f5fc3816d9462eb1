"""Renamed parameters keep their old keyword for one deprecation period (``_deprecate``).

Each old keyword gives what the new one gives, with a FutureWarning naming the new one and
pointing at the caller's line; giving both is a TypeError; the signature shows only the
new name.
"""

from __future__ import annotations

import inspect
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import agenticlens_frames as alf
from agenticlens_frames import viz
from agenticlens_frames.analysis import ExperimentAnalysis
from agenticlens_frames.frames import ExperimentRun

from .conftest import EXAMPLE


@pytest.fixture(scope="module")
def run() -> ExperimentRun:
    return alf.load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")


@pytest.fixture(scope="module")
def analysis(run: ExperimentRun) -> ExperimentAnalysis:
    return alf.analyze(run, frontier_n_resamples=0)


def _html(path: Path, **kwargs: Any) -> str:
    """The page ``write_html_report`` writes, called with ``kwargs`` (the analysis)."""
    return alf.write_html_report(path=path, **kwargs).read_text(encoding="utf-8")


# (public function, old keyword, new keyword, call(run, analysis, tmp_path, **renamed),
#  the value passed under either name). The calls' parameters avoid the old names (``a``).
CASES: list[tuple[Callable[..., Any], str, str, Callable[..., Any], Any]] = [
    (
        alf.analyze,
        "frontier_resamples",
        "frontier_n_resamples",
        lambda r, an, t, **kw: alf.analyze(r, **kw).variants,
        99,
    ),
    (alf.pass_at_k, "ks", "pass_k", lambda r, an, t, **kw: alf.pass_at_k(r, **kw), [1, 3]),
    (
        alf.pass_at_k,
        "level",
        "per",
        lambda r, an, t, **kw: alf.pass_at_k(r, [2], **kw),
        "case",
    ),
    (
        alf.case_level_summary,
        "ks",
        "pass_k",
        lambda r, an, t, **kw: alf.case_level_summary(r, **kw),
        [2],
    ),
    (viz.pass_k_frame, "ks", "pass_k", lambda r, an, t, **kw: viz.pass_k_frame(an, **kw), [1, 2]),
    (
        alf.paired_comparisons,
        "ci_method",
        "method",
        lambda r, an, t, **kw: alf.paired_comparisons(r, correction="holm", **kw),
        "wilcoxon",
    ),
    (
        alf.paired_comparisons,
        "resamples",
        "n_resamples",
        lambda r, an, t, **kw: alf.paired_comparisons(
            r, correction="holm", method="bootstrap", seed=2, **kw
        ),
        199,
    ),
    (
        alf.case_labels,
        "interval",
        "method",
        lambda r, an, t, **kw: alf.case_labels(r, **kw),
        "jeffreys",
    ),
    (
        alf.write_html_report,
        "a",
        "analysis",
        lambda r, an, t, **kw: _html(t / "report.html", **{k: an for k in kw}),
        None,  # the analysis itself
    ),
    (
        alf.EvaluatorRegistry.register_judge,
        "fn",
        "function",
        lambda r, an, t, **kw: _judge(**kw),
        "grader",
    ),
]
IDS = [f"{func.__name__}-{old}" for func, old, *_ in CASES]


def _grader(output: str, case: Any, trace: Any, config: Any) -> float:
    return 1.0


def _judge(**kwargs: Any) -> tuple[Any, ...]:
    """What ``register_judge`` registered, given the grader under either name."""
    registry = alf.EvaluatorRegistry()
    ((name, _),) = kwargs.items()
    returned = registry.register_judge("tone", version="1", samples=2, **{name: _grader})
    judge = registry["tone"]
    return returned, judge.function, judge.evaluator_type, judge.version


def _same(got: Any, want: Any) -> None:
    if isinstance(want, pd.DataFrame):
        pd.testing.assert_frame_equal(got, want)
        assert got.attrs.keys() == want.attrs.keys()
    else:
        assert got == want


@pytest.mark.parametrize(("func", "old", "new", "call", "value"), CASES, ids=IDS)
def test_the_old_keyword_gives_the_same_result_with_a_future_warning(
    run: ExperimentRun,
    analysis: ExperimentAnalysis,
    tmp_path: Path,
    func: Callable[..., Any],
    old: str,
    new: str,
    call: Callable[..., Any],
    value: Any,
) -> None:
    want = call(run, analysis, tmp_path, **{new: value})
    with pytest.warns(FutureWarning, match=rf"`{old}` is deprecated, use `{new}`") as caught:
        got = call(run, analysis, tmp_path, **{old: value})
    _same(got, want)
    deprecations = [w for w in caught if issubclass(w.category, FutureWarning)]
    assert len(deprecations) == 1
    # stacklevel: the warning names the caller's line, not the decorator's
    assert Path(deprecations[0].filename).resolve() == Path(__file__).resolve()


@pytest.mark.parametrize(("func", "old", "new", "call", "value"), CASES, ids=IDS)
def test_giving_both_names_is_a_type_error(
    run: ExperimentRun,
    analysis: ExperimentAnalysis,
    tmp_path: Path,
    func: Callable[..., Any],
    old: str,
    new: str,
    call: Callable[..., Any],
    value: Any,
) -> None:
    message = re.escape(f"got both `{old}` (deprecated) and `{new}`; pass only `{new}`")
    if func is alf.write_html_report:
        with pytest.raises(TypeError, match=message):
            alf.write_html_report(analysis=analysis, a=analysis, path=tmp_path / "r.html")
    elif func is alf.EvaluatorRegistry.register_judge:
        with pytest.raises(TypeError, match=message):
            alf.EvaluatorRegistry().register_judge(
                "tone", fn=_grader, function=_grader, version="1"
            )
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # refused before any warning
            with pytest.raises(TypeError, match=message):
                call(run, analysis, tmp_path, **{old: value, new: value})


@pytest.mark.parametrize(("func", "old", "new"), [case[:3] for case in CASES], ids=IDS)
def test_the_signature_shows_the_new_name_only(
    func: Callable[..., Any], old: str, new: str
) -> None:
    parameters = inspect.signature(func).parameters
    assert new in parameters and old not in parameters
    assert f"    {new}" in (func.__doc__ or "") or f"``{new}``" in (func.__doc__ or "")


def test_positional_calls_are_unchanged(run: ExperimentRun) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pd.testing.assert_frame_equal(alf.pass_at_k(run, [1, 2]), alf.pass_at_k(run, pass_k=[1, 2]))
        registry = alf.EvaluatorRegistry()
        assert registry.register_judge("tone", _grader, version="1") is _grader


def test_register_judge_still_decorates() -> None:
    registry = alf.EvaluatorRegistry()
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        @registry.register_judge("tone", version="1")
        def tone(output: str, case: Any, trace: Any, config: Any) -> float:
            return 1.0

    assert registry["tone"].function is tone


def test_a_forwarded_old_keyword_warns_at_the_users_line(run: ExperimentRun) -> None:
    # as_analysis (and the viz functions' **statistics) pass options on to analyze: the
    # warning names this file, not the package's forwarding call.
    with pytest.warns(FutureWarning, match="`frontier_resamples` is deprecated") as caught:
        got = alf.as_analysis(run, frontier_resamples=0)
    assert [Path(w.filename).resolve() for w in caught] == [Path(__file__).resolve()]
    want = alf.analyze(run, frontier_n_resamples=0).variants
    pd.testing.assert_frame_equal(got.variants, want)
