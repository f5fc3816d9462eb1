"""Tests for the frame-level paired comparisons, case-level frames, planning and gates.

Numbers are recomputed here from the raw ``attempts`` / ``checks`` tables with plain
pandas groupbys, naive loops, scipy and statsmodels, never with the code under test.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import orjson
import pandas as pd
import pytest
from scipy import stats as sps
from scipy.optimize import brentq

from agenticlens_frames import analyze, load_experiment
from agenticlens_frames.errors import InputError
from agenticlens_frames.frames import ExperimentRun
from agenticlens_frames.paired import (
    PAIRED_COLUMNS,
    ComparisonsConfig,
    GuardRails,
    PairedAnalysis,
    case_labels,
    case_level_summary,
    check_guard_rails,
    check_unchanged,
    enforce_lock,
    gate_passed,
    minimum_detectable_effect,
    noise_floor,
    noninferiority_gate,
    paired_analysis,
    paired_comparisons,
    parse_comparisons,
    power_analysis,
    read_lock,
    resolve_comparisons,
    suite_hash,
    trials_for_precision,
    variance_decomposition,
)
from agenticlens_frames.paired.case_level import evaluated_counts, labels_from_counts
from agenticlens_frames.report.paired_json import (
    paired_block,
    paired_frames_from_block,
    report_blocks,
)

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "data" / "support"


def blocks_of(run: ExperimentRun, config: ComparisonsConfig | None = None) -> dict:
    """The report's new top-level keys, as the JSON report writes them."""
    return report_blocks(analyze(run, comparisons=config))


def with_comparisons(run: ExperimentRun, comparisons: dict | None) -> ExperimentRun:
    manifest = dataclasses.replace(run.manifest, comparisons=comparisons)
    return dataclasses.replace(run, manifest=manifest)


@pytest.fixture(scope="module")
def run() -> ExperimentRun:
    # The example declares comparisons: {correction: holm}; these tests choose their own.
    loaded = load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")
    return with_comparisons(loaded, None)


def _undeclared_copy(folder: Path) -> Path:
    """A copy of the example whose manifest declares no comparisons."""
    import shutil

    shutil.copytree(EXAMPLE, folder)
    manifest = folder / "manifest.yaml"
    lines = manifest.read_text().splitlines()
    manifest.write_text("\n".join(x for x in lines if not x.startswith("comparisons:")) + "\n")
    return folder


def naive_case_means(run: ExperimentRun, column: str = "passed") -> pd.DataFrame:
    """variant × case table of mean per-attempt values over evaluated attempts."""
    att = run.attempts[run.attempts["status"].astype(str) != "trial_failed"].copy()
    att["value"] = att[column].astype(float)
    att = att.dropna(subset=["value"])
    return att.pivot_table(
        index="case_id", columns="variant_id", values="value", aggfunc="mean", observed=True
    )


# --- the paired frame --------------------------------------------------------------------


def test_one_row_per_candidate_and_evaluator_with_every_listed_column(run: ExperimentRun) -> None:
    pc = paired_comparisons(run, correction="holm")
    assert list(pc.columns) == PAIRED_COLUMNS
    spec_columns = {
        "paired_items",
        "baseline_only_items",
        "candidate_only_items",
        "mean_difference",
        "ci_low",
        "ci_high",
        "confidence_level",
        "ci_method",
        "p_value",
        "p_value_method",
        "adjusted_p_value",
        "significant",
        "small_sample",
        "degenerate",
        "unevaluated",
    }
    assert spec_columns <= set(pc.columns)
    keys = pc[["candidate_variant_id", "evaluator"]].astype(str).apply(tuple, axis=1)
    assert keys.is_unique
    assert set(pc["baseline_variant_id"].astype(str)) == {"baseline"}
    # retrieval-dense lost trial 5, so it has no pass^5 on any case: omitted, and said so
    assert pc.attrs["omitted"] == [
        {
            "candidate_variant_id": "retrieval-dense",
            "dimension": "reliability",
            "evaluator": "pass_hat_5",
            "reason": "no case has every declared attempt evaluated in both arms (a failed trial)",
        }
    ]
    assert len(pc) == 5 * 4 - 1


def test_quality_row_matches_scipy_on_naive_case_means(run: ExperimentRun) -> None:
    pc = paired_comparisons(run, correction="holm", confidence_level=0.9)
    means = naive_case_means(run)
    row = pc[(pc["candidate_variant_id"] == "prompt-v2") & (pc["evaluator"] == "passed")].iloc[0]
    base, cand = means["baseline"], means["prompt-v2"]
    test = sps.ttest_rel(cand, base)
    low, high = test.confidence_interval(0.9)
    assert row["mean_difference"] == pytest.approx((cand - base).mean())
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high))
    assert row["p_value"] == pytest.approx(test.pvalue)
    assert row["baseline_mean"] == pytest.approx(base.mean())
    assert row["paired_items"] == 14 and row["ci_method"] == "t"
    assert row["improved_items"] == int(((cand - base) > 0).sum())


def test_adjusted_p_values_are_statsmodels_over_the_whole_family(run: ExperimentRun) -> None:
    from statsmodels.stats.multitest import multipletests

    for correction, sm in (
        ("bonferroni", "bonferroni"),
        ("holm", "holm"),
        ("benjamini_hochberg", "fdr_bh"),
    ):
        pc = paired_comparisons(run, correction=correction, alpha=0.1)
        reject, adjusted, _, _ = multipletests(pc["p_value"], alpha=0.1, method=sm)
        np.testing.assert_allclose(pc["adjusted_p_value"], adjusted, rtol=1e-12)
        assert pc["significant"].astype(bool).tolist() == reject.tolist()
        assert set(pc["family_size"]) == {len(pc)}
        assert set(pc["correction"]) == {correction}
        assert set(pc["alpha"]) == {0.1}


def test_per_evaluator_families(run: ExperimentRun) -> None:
    from statsmodels.stats.multitest import multipletests

    pc = paired_comparisons(run, correction="holm", family="per_evaluator")
    for _, grp in pc.groupby("evaluator"):
        want = multipletests(grp["p_value"], method="holm")[1]
        np.testing.assert_allclose(grp["adjusted_p_value"], want)
        assert set(grp["family_size"]) == {len(grp)}


def test_correction_none_states_it_controls_nothing(run: ExperimentRun) -> None:
    pc = paired_comparisons(run, correction="none")
    assert (pc["adjusted_p_value"] == pc["p_value"]).all()
    assert set(pc["correction_controls"]) == {"nothing: p-values are uncorrected, deliberately"}
    holm = paired_comparisons(run, correction="holm")
    assert "family-wise" in holm["correction_controls"].iloc[0]
    bh = paired_comparisons(run, correction="benjamini_hochberg")
    assert "false discovery" in bh["correction_controls"].iloc[0]


def test_check_metric_evaluator_by_naive_loop(run: ExperimentRun) -> None:
    pc = paired_comparisons(run, correction="holm")
    chk = run.checks[run.checks["metric"].astype(str) == "forbidden_tool"]
    per_attempt = chk.groupby(["variant_id", "case_id", "trial"], observed=True)["value"].mean()
    per_case = per_attempt.groupby(level=["variant_id", "case_id"], observed=True).mean()
    table = per_case.unstack("variant_id")
    row = pc[(pc["evaluator"] == "forbidden_tool") & (pc["candidate_variant_id"] == "prompt-v2")]
    row = row.iloc[0]
    d = (table["prompt-v2"] - table["baseline"]).dropna()
    assert row["paired_items"] == len(d) == 3
    assert row["mean_difference"] == pytest.approx(d.mean())
    assert row["small_sample"]  # fewer than 8 paired cases
    assert row["dimension"] == "safety" and row["evaluator_version"] == "0.9.0"


def test_pass_hat_k_evaluator_by_naive_comb(run: ExperimentRun) -> None:
    pc = paired_comparisons(run, correction="holm")
    att = run.attempts[run.attempts["status"].astype(str) != "trial_failed"]
    counts = att.groupby(["variant_id", "case_id"], observed=True)["passed"].agg(["size", "sum"])

    def pass_hat(n: int, c: int, k: int = 5) -> float:
        return math.comb(c, k) / math.comb(n, k) if n >= k else math.nan

    values = counts.apply(lambda r: pass_hat(int(r["size"]), int(r["sum"])), axis=1)
    table = values.unstack("variant_id")
    d = table["large-v2"] - table["baseline"]
    row = pc[(pc["evaluator"] == "pass_hat_5") & (pc["candidate_variant_id"] == "large-v2")]
    assert row["mean_difference"].iloc[0] == pytest.approx(d.mean())
    assert row["dimension"].astype(str).iloc[0] == "reliability"


def test_suite_hash_is_the_sha256_of_the_asdict_json(run: ExperimentRun) -> None:
    # The lock's suite hash is defined as the canonical JSON of dataclasses.asdict of each
    # case; computed here that way, for the example suite and for cases whose inputs hold
    # paths, tuples, a nested dataclass, non-text keys and a numpy scalar.
    import hashlib
    from dataclasses import asdict, replace

    from agenticlens_frames.formats.model import CaseSpec, EvaluatorRef

    def by_definition(suite) -> str:
        cases = [asdict(case) for case in suite.cases]
        text = json.dumps(
            cases, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
        )
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    odd = CaseSpec(
        id="odd",
        name="Odd é",
        index=0,
        input={
            "path": Path("a/b"),
            "pair": (1, (2.5, None)),
            "ints": {3: "c", 1: "a"},
            "n": np.int64(4),
        },
        expected_tool_arguments={"search": {"q": ["x", True]}},
        evaluators=(EvaluatorRef(name="passed"),),
        tags=("t",),
    )
    weird = replace(run.suite, cases=(odd, *run.suite.cases[1:]))
    for suite in (run.suite, weird):
        assert suite_hash(suite) == by_definition(suite)


def test_attempts_of_each_variant_by_naive_selection(run: ExperimentRun) -> None:
    # Per variant: the attempts whose group (variant × cases + case) is the variant's, in
    # their order, with their case index; also with the attempts shuffled (no variant
    # order to rely on). A pure speed change (one sort for all variants): same arrays.
    from agenticlens_frames.paired.dimensions import evaluation

    ev = evaluation(run, "passed")
    shuffle = np.random.default_rng(7).permutation(len(ev.groups))
    shuffled = dataclasses.replace(
        ev, groups=ev.groups[shuffle], attempt_values=ev.attempt_values[shuffle]
    )
    n_var, n_case = ev.values.shape
    for each in (ev, shuffled):
        for v in range(n_var):
            rows = [i for i, g in enumerate(each.groups.tolist()) if g // n_case == v]
            values, cases = each.attempts_of(v)
            assert values.tolist() == [each.attempt_values[i] for i in rows]
            assert cases.tolist() == [each.groups[i] % n_case for i in rows]
            assert (values.dtype, cases.dtype) == (each.attempt_values.dtype, each.groups.dtype)
    assert sum(len(ev.attempts_of(v)[0]) for v in range(n_var)) == len(ev.groups)


def test_latency_and_cost_are_lower_is_better(run: ExperimentRun) -> None:
    pc = paired_comparisons(run, correction="holm")
    latency = pc[pc["evaluator"] == "latency_ms"]
    assert not latency["higher_is_better"].any()
    means = naive_case_means(run, "latency_ms")
    d = means["model-large"] - means["baseline"]
    row = latency[latency["candidate_variant_id"] == "model-large"].iloc[0]
    assert row["mean_difference"] == pytest.approx(d.mean())
    # slower on more cases means more regressions for a lower-is-better evaluator
    assert row["regressed_items"] == int((d > 0).sum())
    assert set(pc.loc[pc["evaluator"] == "cost_usd", "evaluator_version"]) == {"measured"}


def test_excluded_cases_and_unevaluated_trials_are_counted(run: ExperimentRun) -> None:
    att = run.attempts.copy()
    lost = (att["variant_id"] == "model-large") & (att["case_id"] == "track-order")
    att["status"] = att["status"].where(~lost, "trial_failed")
    att["passed"] = att["passed"].where(~lost, False)
    changed = dataclasses.replace(run, attempts=att)
    pc = paired_comparisons(changed, correction="holm")
    row = pc[(pc["candidate_variant_id"] == "model-large") & (pc["evaluator"] == "passed")]
    row = row.iloc[0]
    assert row["paired_items"] == 13
    assert row["baseline_only_items"] == 1 and row["candidate_only_items"] == 0
    # per comparison row: the declared attempts of its two variants that have no score
    failed = att["status"].astype(str) == "trial_failed"
    for r in pc.itertuples(index=False):
        pair = (
            att["variant_id"]
            .astype(str)
            .isin([str(r.baseline_variant_id), str(r.candidate_variant_id)])
        )
        assert r.unevaluated == int((failed & pair).sum()) + (5 * 14 * 2 - int(pair.sum()))
    assert len(set(pc["unevaluated"])) > 1  # not one experiment-wide count on every row


def test_degenerate_comparison(run: ExperimentRun) -> None:
    att = run.attempts.copy()
    # the candidate passes exactly what the baseline passed, attempt for attempt
    base = att[att["variant_id"] == "baseline"].set_index(["case_id", "trial"])["passed"]
    cand = att["variant_id"] == "model-large"
    keys = list(zip(att.loc[cand, "case_id"], att.loc[cand, "trial"], strict=True))
    att.loc[cand, "passed"] = base.reindex(keys).to_numpy()
    pc = paired_comparisons(dataclasses.replace(run, attempts=att), correction="holm")
    row = pc[(pc["candidate_variant_id"] == "model-large") & (pc["evaluator"] == "passed")]
    row = row.iloc[0]
    assert row["degenerate"] and row["mean_difference"] == 0.0
    assert row["ci_low"] == row["ci_high"] == 0.0
    assert row["p_value"] == 1.0
    assert "same amount" in row["note"]


def _mde_by_hand(sd: float, units: int, level: float, power: float = 0.8) -> float:
    """The paired t's MDE: the δ whose two-sided noncentral-t power at ``level`` is ``power``
    (statsmodels' TTestPower; where its solver fails, solved directly with the far tail,
    P(T < -crit), left out: negligible at such power, and scipy's nct.cdf is NaN there)."""
    from statsmodels.stats.power import TTestPower

    if units >= 10:
        return TTestPower().solve_power(nobs=units, alpha=level, power=power) * sd
    # statsmodels' solver fails at few df; solve the power equation directly
    crit = sps.t.isf(level / 2, units - 1)

    def gap(e: float) -> float:
        return sps.nct.sf(crit, units - 1, e / sd * math.sqrt(units)) - power

    return brentq(gap, 0.0, 1e6 * sd)


def test_non_significant_rows_state_what_the_run_could_not_detect(run: ExperimentRun) -> None:
    pc = paired_comparisons(run, correction="holm")
    quiet = pc[~pc["significant"].astype(bool) & ~pc["degenerate"]]
    assert len(quiet)
    beyond = 0
    for row in quiet.itertuples():
        # the MDE at Bonferroni's per-test level, from the row's own standard error
        level = row.alpha / row.family_size
        sd = row.standard_error * math.sqrt(row.n_clusters)
        want = _mde_by_hand(sd, row.n_clusters, level)
        if row.unit in ("proportion", "score") and want > 1:
            # no difference of [0, 1] values is that large: no MDE exists
            beyond += 1
            assert row.mde == math.inf
            assert row.note.startswith("not detectable with this design")
            assert "pp" not in row.note.split("(")[0]
        else:
            assert row.note.startswith("this run could not detect effects smaller than")
            assert row.mde == pytest.approx(want, rel=1e-5)
    assert beyond  # the bundled run has such rows (with 19 tests, α = 0.0026)
    loud = pc[pc["significant"].astype(bool)]
    assert (loud["note"] == "").all()


def _one_trial_run(
    passed: dict[str, list[bool]], latency: dict[str, list[float]] | None = None
) -> ExperimentRun:
    """One trial per case, variants in the order given (the first is the baseline)."""
    variants = list(passed)
    cases = [f"case{i}" for i in range(len(passed[variants[0]]))]
    rows = [
        {
            "variant_id": v,
            "trial": 1,
            "case_id": c,
            "passed": passed[v][i],
            **({"latency_ms": latency[v][i]} if latency else {}),
        }
        for v in variants
        for i, c in enumerate(cases)
    ]
    return ExperimentRun.from_frames(
        pd.DataFrame(rows), pd.DataFrame({"variant_id": variants}), pd.DataFrame({"case_id": cases})
    )


@pytest.mark.parametrize(
    ("correction", "method", "alpha"),
    [
        ("none", None, 0.25),
        ("bonferroni", "bonferroni", 0.5),
        ("holm", "holm", 0.5),
        ("benjamini_hochberg", "fdr_bh", 0.25),
    ],
)
def test_an_adjusted_p_value_exactly_at_alpha_is_significant(
    correction: str, method: str | None, alpha: float
) -> None:
    """``significant = adjusted_p_value <= alpha``, as statsmodels rejects: two candidates
    that each pass the three cases the baseline fails have the exact sign-flip p 2^(1-3) =
    0.25 (every difference +1), a tie that each correction adjusts to exactly ``alpha``."""
    from statsmodels.stats.multitest import multipletests

    run = _one_trial_run({"a": [False] * 3, "b": [True] * 3, "c": [True] * 3})
    pc = paired_comparisons(run, correction=correction, alpha=alpha)
    assert pc["p_value"].tolist() == [0.25, 0.25]
    if method is None:
        reject, adjusted = np.array([True, True]), np.array([0.25, 0.25])
    else:
        reject, adjusted, _, _ = multipletests([0.25, 0.25], alpha=alpha, method=method)
    assert pc["adjusted_p_value"].tolist() == adjusted.tolist() == [alpha, alpha]
    assert pc["significant"].tolist() == reject.tolist() == [True, True]
    assert (pc["note"] == "").all() and pc["family_size"].tolist() == [2, 2]


def test_a_comparison_without_a_test_is_not_counted_in_the_family() -> None:
    """Candidate b has a latency on one case only: no test (p NaN), so its row is neither
    significant nor not, and the family is the three tests made (scipy's paired t, Holm by
    statsmodels); per evaluator, c's latency is a family of one, its p unadjusted."""
    from statsmodels.stats.multitest import multipletests

    passed = {
        "a": [False, False, True, False],
        "b": [True, False, True, True],
        "c": [True, True, True, False],
    }
    nan = math.nan
    latency = {
        "a": [100.0, 200.0, 300.0, 400.0],
        "b": [150.0, nan, nan, nan],
        "c": [110.0, 230.0, 290.0, 450.0],
    }
    run = _one_trial_run(passed, latency)
    rate = {v: np.array(x, dtype=float) for v, x in passed.items()}
    raw = {
        ("b", "quality"): sps.ttest_rel(rate["b"], rate["a"]).pvalue,
        ("c", "quality"): sps.ttest_rel(rate["c"], rate["a"]).pvalue,
        ("c", "latency"): sps.ttest_rel(latency["c"], latency["a"]).pvalue,
    }
    pc = paired_comparisons(run, correction="holm")
    pc = pc.set_index([pc["candidate_variant_id"].astype(str), pc["dimension"].astype(str)])
    untested = pc.loc[("b", "latency")]
    assert untested["paired_items"] == 1 and math.isnan(untested["p_value"])
    assert math.isnan(untested["adjusted_p_value"]) and pd.isna(untested["significant"])
    assert untested["note"] == "no test: fewer than two paired cases (or clusters)"
    tested = pc.loc[list(raw)]
    np.testing.assert_allclose(tested["p_value"], list(raw.values()), rtol=1e-12)
    want = multipletests(list(raw.values()), method="holm")[1]
    np.testing.assert_allclose(tested["adjusted_p_value"], want, rtol=1e-12)
    assert set(pc["family_size"]) == {3}
    per = paired_comparisons(run, correction="holm", family="per_evaluator")
    [only] = per[per["dimension"] == "latency"].dropna(subset=["p_value"]).itertuples()
    assert only.family_size == 1 and only.adjusted_p_value == only.p_value
    assert only.p_value == pytest.approx(raw[("c", "latency")], rel=1e-12)


def test_two_paired_cases_state_their_detectable_effect() -> None:
    """Two cases are the fewest with a test and a standard error: the MDE (t with 1 df) is
    stated, in the row's unit, and an MDE below 1 ms keeps its digits rather than reading
    as "0 ms". The family: two degenerate quality rows and the two latency rows (Holm,
    per-test level 0.05 / 4)."""
    run = _one_trial_run(
        {v: [True, True] for v in "abc"},
        {"a": [100.0, 100.0], "b": [110.0, 130.0], "c": [100.001, 100.003]},
    )
    pc = paired_comparisons(run, correction="holm")
    latency = pc[pc["dimension"] == "latency"].set_index("candidate_variant_id")
    assert set(pc["family_size"]) == {4}
    for cand, d, shown in (("b", [10.0, 30.0], "653 ms"), ("c", [0.001, 0.003], "0.065 ms")):
        row = latency.loc[cand]
        assert row["n_clusters"] == 2 and not row["significant"]
        want = _mde_by_hand(float(np.std(d, ddof=1)), 2, 0.05 / 4)
        assert row["mde"] == pytest.approx(want, rel=1e-6)
        assert row["note"] == (
            f"this run could not detect effects smaller than {shown} (80% power at α = 0.0125)"
        )


def test_cluster_by_metadata_field_matches_statsmodels(run: ExperimentRun) -> None:
    import statsmodels.api as sm

    pc = paired_comparisons(run, correction="holm", cluster="topic")
    means = naive_case_means(run)
    topics = {c.id: c.metadata["topic"] for c in run.suite.cases}
    d = (means["large-v2"] - means["baseline"]).to_numpy()
    groups = [topics[c] for c in means.index.astype(str)]
    fit = sm.OLS(d, np.ones(len(d))).fit(
        cov_type="cluster", cov_kwds={"groups": pd.factorize(pd.Series(groups))[0]}, use_t=True
    )
    row = pc[(pc["candidate_variant_id"] == "large-v2") & (pc["evaluator"] == "passed")].iloc[0]
    assert row["standard_error"] == pytest.approx(fit.bse[0], rel=1e-10)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(tuple(fit.conf_int()[0]), rel=1e-10)
    assert row["n_clusters"] == len(set(groups))
    assert row["ci_method"].startswith("CR1 t")


def test_cluster_field_missing_is_an_input_error(run: ExperimentRun) -> None:
    with pytest.raises(
        InputError, match=r"comparisons\.cluster: 14 case\(s\) have no value of the metadata"
    ):
        paired_comparisons(run, correction="holm", cluster="nope")


@pytest.mark.parametrize("method", ["bootstrap", "permutation", "wilcoxon"])
def test_alternative_methods_name_themselves(run: ExperimentRun, method: str) -> None:
    # scipy's exact Wilcoxon with ties is a permutation test: keep the slow one to one row set
    only_quality = {"safety": None, "reliability": None, "latency": None, "cost": None}
    evaluators = only_quality if method == "wilcoxon" else None
    pc = paired_comparisons(
        run, correction="holm", method=method, n_resamples=999, seed=3, evaluators=evaluators
    )
    if method == "bootstrap":
        again = paired_comparisons(run, correction="holm", method=method, n_resamples=999, seed=3)
        pd.testing.assert_frame_equal(pc, again)  # seeded: reproducible
    row = pc[(pc["candidate_variant_id"] == "prompt-v2") & (pc["evaluator"] == "passed")].iloc[0]
    d = naive_case_means(run)["prompt-v2"] - naive_case_means(run)["baseline"]
    if method == "wilcoxon":
        assert row["p_value"] == pytest.approx(sps.wilcoxon(d[d != 0]).pvalue)
        assert "Wilcoxon" in row["p_value_method"]
    else:  # permutation, and bootstrap's test (its interval is the bootstrap's)
        assert "sign-flip" in row["p_value_method"]
        want = sps.permutation_test(
            (d.to_numpy(),), np.mean, permutation_type="samples", n_resamples=np.inf
        ).pvalue
        assert row["p_value"] == pytest.approx(want)
        assert ("bootstrap" in row["ci_method"]) == (method == "bootstrap")


def test_mcnemar_with_one_attempt_per_arm(make_synthetic: Callable[..., Path]) -> None:
    from statsmodels.stats.contingency_tables import mcnemar

    folder = make_synthetic(variants=3, trials=1, cases=60, seed=4)
    run = load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    pc = paired_comparisons(run, correction="holm", method="mcnemar")
    means = naive_case_means(run)
    base_id = run.manifest.baseline_variant_id
    quality = pc[pc["evaluator"] == "passed"]
    for row in quality.itertuples():
        pair = means[[base_id, str(row.candidate_variant_id)]].dropna()
        a, b = pair.iloc[:, 0], pair.iloc[:, 1]
        table = [
            [int(((a == 1) & (b == 1)).sum()), int(((a == 1) & (b == 0)).sum())],
            [int(((a == 0) & (b == 1)).sum()), int(((a == 0) & (b == 0)).sum())],
        ]
        assert row.p_value == pytest.approx(mcnemar(table, exact=True).pvalue)
        assert row.ci_method == "Bonett-Price adjusted Wald"
    latency = pc[pc["evaluator"] == "latency_ms"]
    assert latency["ci_method"].str.contains("McNemar needs").all()


# --- declaring and fixing the correction ---------------------------------------------------


def test_there_is_no_default_correction(run: ExperimentRun) -> None:
    with pytest.raises(TypeError):
        paired_comparisons(run)  # type: ignore[call-arg]
    with pytest.raises(InputError, match="correction: paired comparisons need a declared"):
        paired_comparisons(run, correction=None)
    with pytest.raises(InputError, match=r"unknown correction 'holms'.*did you mean 'holm'"):
        paired_comparisons(run, correction="holms")


def test_manifest_declaration_is_used_and_fixed(run: ExperimentRun) -> None:
    declared = with_comparisons(run, {"correction": "bonferroni", "alpha": 0.01})
    pc = paired_comparisons(declared, correction="manifest")
    assert set(pc["correction"]) == {"bonferroni"} and set(pc["alpha"]) == {0.01}
    assert pc.attrs["settings"]["source"] == "manifest"
    same = paired_comparisons(declared, correction="bonferroni")
    pd.testing.assert_frame_equal(pc, same)
    with pytest.raises(InputError) as info:
        paired_comparisons(declared, correction="holm")
    text = str(info.value)
    assert "manifest.yaml: comparisons.correction: the experiment fixed correction" in text
    assert "'bonferroni'" in text and "'holm'" in text
    with pytest.raises(InputError, match=r"comparisons\.alpha"):
        paired_comparisons(declared, correction="manifest", alpha=0.05)
    # a setting the manifest left open may still be chosen
    ci = paired_comparisons(declared, correction="manifest", confidence_level=0.9)
    assert set(ci["confidence_level"]) == {0.9}


def test_manifest_without_correction_is_refused() -> None:
    with pytest.raises(InputError, match=r"manifest\.yaml: comparisons: missing required key"):
        parse_comparisons({"alpha": 0.05})


@pytest.mark.parametrize(
    ("raw", "where", "text"),
    [
        ({"correction": "holm", "alpah": 0.1}, "comparisons", "did you mean 'alpha'"),
        ({"correction": "fdr"}, "comparisons.correction", "choose one of"),
        ({"correction": "holm", "alpha": 1.5}, "comparisons.alpha", "expected a number"),
        ({"correction": "holm", "alpha": 1}, "comparisons.alpha", "> 0 and <= 0.5"),
        ({"correction": "holm", "method": "boot"}, "comparisons.method", "did you mean"),
        (
            {"correction": "holm", "evaluators": {"qualty": "passed"}},
            "comparisons.evaluators",
            "did you mean 'quality'",
        ),
        (
            {"correction": "holm", "evaluators": {"safety": "x@"}},
            "comparisons.evaluators.safety",
            "name@version",
        ),
        (
            {"correction": "holm", "noninferiority": {"margin": -1}},
            "comparisons.noninferiority.margin",
            ">= 0",
        ),
        (
            {"correction": "holm", "limits": {"max_evaluators": "many"}},
            "comparisons.limits.max_evaluators",
            "integer",
        ),
    ],
)
def test_manifest_errors_name_the_place(raw: dict, where: str, text: str) -> None:
    with pytest.raises(InputError) as info:
        parse_comparisons(raw, file="exp/manifest.yaml")
    message = str(info.value)
    assert message.startswith(f"exp/manifest.yaml: {where}:"), message
    assert text in message


def test_every_problem_of_the_comparisons_block_is_reported_at_once() -> None:
    raw = {
        "corection": "holm",  # misspelt: not also "missing correction"
        "alpha": 1.5,
        "evaluators": {"qualty": "passed", "safety": "x@"},
        "noninferiority": [{"margin": -1}, "quality", {"margin": 1, "dimension": "cost"}],
        "limits": {"max_evaluators": "many"},
    }
    with pytest.raises(InputError) as info:
        parse_comparisons(raw, file="exp/manifest.yaml")
    places = [problem.location for problem in info.value.problems]
    assert places == [
        "comparisons",
        "comparisons.alpha",
        "comparisons.evaluators",
        "comparisons.evaluators.safety",
        "comparisons.noninferiority[0].margin",
        "comparisons.noninferiority[1]",
        "comparisons.limits.max_evaluators",
    ]
    assert str(info.value).startswith("exp/manifest.yaml: 7 problems:\n")
    assert "unknown key 'corection' (did you mean 'correction'?)" in str(info.value)


@pytest.mark.parametrize(
    ("written", "argument", "value", "message"),
    [
        ("power", "power", 0.9995, "expected a number > 0 and <= 0.999, got 0.9995"),
        ("power", "power", 0.0, "expected a number > 0 and <= 0.999, got 0.0"),
        ("alpha", "alpha", 1.0, "expected a number > 0 and <= 0.5, a significance level"),
        ("confidence_level", "confidence_level", 0.0, "expected a number strictly between 0 and 1"),
        ("resamples", "resamples", 98, "expected an integer >= 99, got 98"),
        ("seed", "seed", -1, "expected an integer >= 0, got -1"),
        ("noninferiority", "noninferiority_margin", -0.5, "expected a number >= 0, got -0.5"),
        ("method", "method", "boot", "unknown method 'boot'"),
        ("family", "family", "each", "unknown family 'each'"),
    ],
)
def test_a_setting_has_one_rule_in_the_manifest_and_in_python(
    run: ExperimentRun, written: str, argument: str, value: object, message: str
) -> None:
    # Power 0.9995 used to pass from Python and fail in a manifest: one rule now decides.
    with pytest.raises(InputError) as in_manifest:
        parse_comparisons({"correction": "holm", written: value}, file="exp/manifest.yaml")
    with pytest.raises(InputError) as in_python:
        resolve_comparisons(run.manifest, correction="holm", **{argument: value})
    assert in_manifest.value.location == f"comparisons.{written}"
    assert in_python.value.location == argument
    assert in_manifest.value.message == in_python.value.message
    assert in_manifest.value.message.startswith(message)


@pytest.mark.parametrize(
    ("argument", "value", "message"),
    [
        ("power", 0.9995, "expected a number > 0 and <= 0.999, got 0.9995"),
        ("alpha", 1.0, "expected a number > 0 and <= 0.5"),
        ("alpha", 0.95, "expected a number > 0 and <= 0.5, a significance level such as 0.05"),
        ("correction", "holmes", "unknown correction 'holmes'"),
        ("resamples", 98, "expected an integer >= 99, got 98"),
        ("limits", GuardRails(max_evaluators=0), "expected an integer >= 1, got 0"),
    ],
)
def test_settings_built_in_python_follow_the_same_rule(
    argument: str, value: object, message: str
) -> None:
    # docs/statistics.md shows analyze(run, comparisons=ComparisonsConfig(...)): a third
    # way in, which used to take any value.
    settings = {"correction": "holm", argument: value}
    with pytest.raises(InputError) as info:
        ComparisonsConfig(**settings)
    assert info.value.message.startswith(message)
    assert info.value.location == argument


def test_the_edges_of_each_rule_are_allowed(run: ExperimentRun) -> None:
    edge = {"alpha": 0.5, "power": 0.999, "resamples": 99, "seed": 0, "noninferiority_margin": 0}
    config = resolve_comparisons(run.manifest, correction="holm", **edge)
    assert (config.power, config.resamples, config.seed) == (0.999, 99, 0)
    assert parse_comparisons({"correction": "holm", "power": 0.999}).power == 0.999


def test_guard_rails_from_python_follow_the_manifest_minimums(run: ExperimentRun) -> None:
    with pytest.raises(InputError) as in_manifest:
        parse_comparisons({"correction": "holm", "limits": {"max_configurations": 1}})
    with pytest.raises(InputError) as in_python:
        resolve_comparisons(
            run.manifest, correction="holm", limits=GuardRails(max_configurations=1)
        )
    assert (
        in_manifest.value.message == in_python.value.message == ("expected an integer >= 2, got 1")
    )


def test_every_registered_method_is_computed_by_the_estimator() -> None:
    import typing

    from agenticlens_frames.paired import METHODS
    from agenticlens_frames.stats_paired import PairedMethod, paired_difference

    # One binary attempt per arm and case, so that every method applies.
    base = np.array([1, 0, 1, 1, 0, 1, 0, 1, 1, 0, 0, 1, 0, 1], dtype=float)
    cand = np.array([1, 1, 1, 1, 0, 1, 1, 1, 0, 1, 0, 1, 1, 1], dtype=float)
    d = cand - base
    p_values = {}
    for name in METHODS:
        r = paired_difference(
            d, method=name, baseline=base, candidate=cand, n_resamples=400,
            rng=np.random.default_rng(0),
        )  # fmt: skip
        assert r.estimate == pytest.approx(d.mean())
        p_values[name] = r.p_value
    # Independent references for the closed-form tests.
    assert p_values["t"] == pytest.approx(sps.ttest_rel(cand, base).pvalue)
    assert p_values["wilcoxon"] == pytest.approx(sps.wilcoxon(d[d != 0]).pvalue)
    worse, better = int(((base == 1) & (cand == 0)).sum()), int(((base == 0) & (cand == 1)).sum())
    assert p_values["mcnemar"] == pytest.approx(sps.binomtest(worse, worse + better).pvalue)
    with pytest.raises(ValueError, match="method must be one of"):
        paired_difference(d, method="sign")  # type: ignore[arg-type]
    # The type that names the methods for type checkers lists the registry, in order.
    assert typing.get_args(PairedMethod) == tuple(METHODS)
    assert [m for m in METHODS.values() if not m.clusters] == [
        METHODS["wilcoxon"],
        METHODS["mcnemar"],
    ]


def test_the_statistics_page_lists_every_registered_method_in_order() -> None:
    from agenticlens_frames.paired import method_names

    text = (REPO / "docs" / "statistics.md").read_text(encoding="utf-8")
    section = text.split("### Interval and test", 1)[1].split("\n###", 1)[0]
    lines = section.split("| `method=`", 1)[1].splitlines()[2:]  # past head and rule
    rows = [line for line in lines[: lines.index("")] if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == list(method_names())


def test_a_method_without_clusters_is_refused_with_a_cluster(run: ExperimentRun) -> None:
    with pytest.raises(InputError, match=r"use method t, bootstrap or permutation with a cluster"):
        paired_comparisons(run, correction="holm", method="wilcoxon", cluster="topic")


def test_full_manifest_form_parses() -> None:
    config = parse_comparisons(
        {
            "correction": "benjamini_hochberg",
            "alpha": 0.1,
            "method": "bootstrap",
            "family": "per_evaluator",
            "cluster": "topic",
            "evaluators": {
                "quality": "score",
                "safety": {"name": "forbidden_tool", "version": "0.9.0"},
            },
            "noninferiority": 0.02,
            "limits": {"allow_large": True},
            "seed": 7,
        }
    )
    assert isinstance(config, ComparisonsConfig)
    assert config.evaluator_map["safety"].version == "0.9.0"
    assert config.noninferiority_margin == 0.02 and config.noninferiority_dimension == "quality"
    assert config.limits.allow_large and config.seed == 7
    assert parse_comparisons(None) is None


def test_pinned_evaluator_version_is_checked(run: ExperimentRun) -> None:
    ok = paired_comparisons(run, correction="holm", evaluators={"safety": "forbidden_tool@0.9.0"})
    assert len(ok)
    with pytest.raises(
        InputError, match=r"comparisons\.evaluators\.safety: evaluator 'forbidden_tool' is pinned"
    ):
        paired_comparisons(run, correction="holm", evaluators={"safety": "forbidden_tool@1.0"})
    with pytest.raises(InputError, match=r"unknown evaluator 'forbiden_tool'.*did you mean"):
        paired_comparisons(run, correction="holm", evaluators={"safety": "forbiden_tool"})


def test_an_unknown_evaluator_of_a_summary_names_its_evaluator_argument(run: ExperimentRun) -> None:
    """variance_decomposition(run, evaluator="nope") was reported at the manifest's
    ``comparisons.evaluators.quality``, a setting the caller never gave."""
    for summary in (variance_decomposition, noise_floor, case_labels, case_level_summary):
        with pytest.raises(InputError, match=r"^evaluator: unknown evaluator 'forbiden_tool'"):
            summary(run, evaluator="forbiden_tool")
    # the paired comparisons still name the manifest's key they read
    with pytest.raises(InputError, match=r"^comparisons\.evaluators\.safety: unknown"):
        paired_comparisons(run, correction="holm", evaluators={"safety": "forbiden_tool"})


def test_a_pass_k_beyond_the_trial_count_is_refused(run: ExperimentRun) -> None:
    """pass_hat_9 on a 5-trial run was accepted; every case's value was NaN, so every
    candidate's reliability row was dropped "(a failed trial)", which was not the cause."""
    assert run.manifest.trial_count == 5
    for name in ("pass_hat_9", "pass_at_6"):
        with pytest.raises(
            InputError,
            match=rf"^evaluators\.reliability: evaluator '{name}' needs "
            rf"{name[-1]} attempts per case but this run has 5 trial\(s\).*at most 5",
        ):
            paired_comparisons(run, correction="holm", evaluators={"reliability": name})
    # a summary's own evaluator argument is checked where it is resolved
    with pytest.raises(InputError, match=r"^evaluator: evaluator 'pass_hat_6' needs 6 attempts"):
        variance_decomposition(run, evaluator="pass_hat_6")
    ok = paired_comparisons(run, correction="holm", evaluators={"reliability": "pass_hat_5"})
    assert "reliability" in set(ok["dimension"])


def test_a_pass_k_name_with_a_non_ascii_digit_is_an_unknown_evaluator(run: ExperimentRun) -> None:
    """ "pass_at_²": str.isdigit() is true of "²" and int() cannot read it, so the name
    raised a bare ValueError; it is an unknown evaluator like any other name."""
    with pytest.raises(InputError, match=r"^evaluator: unknown evaluator 'pass_at_²'"):
        variance_decomposition(run, evaluator="pass_at_²")


def test_lock_fixes_correction_suite_evaluators_and_candidates(
    run: ExperimentRun, tmp_path: Path
) -> None:
    lock = tmp_path / "comparisons.lock.json"
    paired_comparisons(run, correction="holm", lock=lock)
    stored = read_lock(lock)
    assert stored is not None and stored["correction"] == "holm"
    assert stored["suite"]["sha256"] == suite_hash(run.suite)
    assert stored["candidates"] == sorted(v for v in run.manifest.variant_ids if v != "baseline")
    assert stored["evaluators"]["quality"] == "passed@0.9.0"
    paired_comparisons(run, correction="holm", lock=lock)  # unchanged: fine
    with pytest.raises(InputError, match=r"correction: 'holm' -> 'bonferroni'"):
        paired_comparisons(run, correction="bonferroni", lock=lock)
    # an edited suite under the same version is detected
    case = dataclasses.replace(run.suite.cases[0], expected_contains=("refund",))
    suite = dataclasses.replace(run.suite, cases=(case, *run.suite.cases[1:]))
    with pytest.raises(InputError, match="suite"):
        paired_comparisons(dataclasses.replace(run, suite=suite), correction="holm", lock=lock)
    # so is a changed candidate set
    fewer = dataclasses.replace(
        run.manifest, variants=tuple(v for v in run.manifest.variants if v.id != "large-v2")
    )
    fp = dict(stored, candidates=sorted(v.id for v in fewer.variants if v.id != "baseline"))
    with pytest.raises(InputError, match="candidates"):
        check_unchanged(stored, fp)


def test_lock_refuses_to_overwrite_an_unrelated_file(tmp_path: Path) -> None:
    other = tmp_path / "notes.json"
    other.write_text("{}")
    with pytest.raises(InputError, match="refusing to overwrite"):
        enforce_lock(other, {"correction": "holm"})


def test_a_saved_report_is_a_lock_too(run: ExperimentRun, tmp_path: Path) -> None:
    config = resolve_comparisons(run.manifest, correction="holm")
    report = tmp_path / "report.json"
    report.write_bytes(
        orjson.dumps({"paired_comparisons": paired_block(paired_analysis(run, config))})
    )
    stored = read_lock(report)
    assert stored is not None
    other = paired_block(paired_analysis(run, resolve_comparisons(run.manifest, correction="none")))
    with pytest.raises(InputError, match="correction"):
        check_unchanged(stored, other["fingerprint"], source=report)


# --- guard rails -----------------------------------------------------------------------------


def test_guard_rails_refuse_before_any_work(run: ExperimentRun) -> None:
    config = resolve_comparisons(run.manifest, correction="holm")
    counts = check_guard_rails(run.manifest, run.suite, config)
    assert counts == {"configurations": 5, "evaluators": 5, "case_scores": 5 * 14 * 5 * 5}
    tight = resolve_comparisons(
        run.manifest, correction="holm", limits=GuardRails(max_configurations=4)
    )
    with pytest.raises(InputError, match=r"limits\.max_configurations: 5 configurations exceed"):
        check_guard_rails(run.manifest, run.suite, tight)
    declared = with_comparisons(run, {"correction": "holm", "limits": {"max_case_scores": 100}})
    with pytest.raises(InputError) as info:
        paired_comparisons(declared, correction="manifest")
    assert "comparisons.limits.max_case_scores: 1,750 case-scores exceed the limit of 100" in str(
        info.value
    )
    assert "allow_large: true" in str(info.value)
    lifted = with_comparisons(
        run, {"correction": "holm", "limits": {"max_case_scores": 100, "allow_large": True}}
    )
    assert len(paired_comparisons(lifted, correction="manifest"))


# --- non-inferiority gate ---------------------------------------------------------------------


def test_noninferiority_gate_by_hand(run: ExperimentRun) -> None:
    pc = paired_comparisons(run, correction="holm", noninferiority_margin=0.05)
    gate = pc.attrs["noninferiority"]
    means = naive_case_means(run)
    for row in gate.itertuples():
        d = (means[row.candidate_variant_id] - means["baseline"]).dropna().to_numpy()
        # by hand: two pseudo-cases at +1 and -1, never shrinking towards passing
        augmented = np.concatenate([d, [1.0, -1.0]])
        m = len(augmented)
        spread = math.sqrt(sum((x - augmented.mean()) ** 2 for x in augmented) / m)
        centre = min(augmented.mean(), d.mean())
        bound = centre - sps.t.ppf(0.95, len(d) + 1) * spread / math.sqrt(m)
        assert row.bound == pytest.approx(bound, rel=1e-12)
        assert row.passed == (bound > -0.05)
        assert row.bound_side == "lower"
        assert "pseudo-cases" in row.bound_method
    assert gate.attrs["passed"] == gate_passed(gate) == bool(gate["passed"].all())


def test_noninferiority_gate_for_lower_is_better_and_missing_rows(run: ExperimentRun) -> None:
    pc = paired_comparisons(run, correction="holm")
    gate = noninferiority_gate(pc, margin=1000.0, dimension="latency")
    assert set(gate["bound_side"]) == {"upper"}
    means = naive_case_means(run, "latency_ms")
    d = (means["prompt-v2"] - means["baseline"]).dropna()
    upper = d.mean() + sps.t.ppf(0.95, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    row = gate[gate["candidate_variant_id"] == "prompt-v2"].iloc[0]
    assert row["bound"] == pytest.approx(upper) and row["passed"] == (upper < 1000)
    reliability = noninferiority_gate(pc, margin=0.5, dimension="reliability")
    missing = reliability[reliability["candidate_variant_id"] == "retrieval-dense"].iloc[0]
    assert not missing["passed"] and "no comparable" in missing["reason"]
    assert not gate_passed(reliability)


def test_noninferiority_gate_fails_when_the_declared_clusters_are_one(run: ExperimentRun) -> None:
    """Every case in one declared cluster: the cases are one unit, the comparison has no
    interval (G/(G - 1) is undefined at G = 1), and the gate must not pass on a bound that
    counts the 14 cases as independent (it did, for a candidate equal to the baseline)."""
    tied = run.attempts[run.attempts["variant_id"].isin(["baseline", "prompt-v2"])].copy()
    tied["variant_id"] = tied["variant_id"].astype(str)
    copy = tied[tied["variant_id"] == "baseline"].assign(variant_id="same")
    attempts = pd.concat([tied, copy], ignore_index=True)[["variant_id", "trial", "case_id"]]
    attempts["passed"] = pd.concat([tied, copy], ignore_index=True)["passed"].to_numpy()
    cases = pd.DataFrame({"case_id": run.suite.case_ids})
    cases["metadata"] = [{"suite": "one"}] * len(cases)
    one = ExperimentRun.from_frames(
        attempts, pd.DataFrame({"variant_id": ["baseline", "prompt-v2", "same"]}), cases
    )
    pc = paired_comparisons(one, correction="holm", cluster="suite", noninferiority_margin=0.5)
    same = pc[(pc["candidate_variant_id"] == "same") & (pc["evaluator"] == "passed")].iloc[0]
    assert same["n_clusters"] == 1 and math.isnan(same["ci_low"])
    # By hand, the pseudo-case bound over the cases as independent units passes δ = 0.5:
    # d = 0 on every case, with +1 and -1 added, t at n + 1 df.
    n = same["paired_items"]
    independent = -sps.t.ppf(0.95, n + 1) * math.sqrt(2 / (n + 2)) / math.sqrt(n + 2)
    assert independent > -0.5
    gate = pc.attrs["noninferiority"].set_index("candidate_variant_id")
    assert not gate["passed"].any() and not gate_passed(pc.attrs["noninferiority"])
    assert gate.loc["same", "reason"] == "no interval: the paired cases form one cluster"
    assert math.isnan(gate.loc["same", "bound"])


# --- case level -------------------------------------------------------------------------------


def test_case_level_summary_says_why_one_case_has_no_interval() -> None:
    """One case: scipy's t interval on 0 degrees of freedom is NaN, and so are the rows'
    bounds; the note says why (it only named the method), and the effective-n Wilson's
    degrees of freedom are NaN, not 0."""
    one = ExperimentRun.from_frames(
        pd.DataFrame(
            {
                "variant_id": ["a", "a", "b", "b"],
                "trial": [1, 2, 1, 2],
                "case_id": ["x"] * 4,
                "passed": [True, False, True, True],
            }
        ),
        pd.DataFrame({"variant_id": ["a", "b"]}),
        pd.DataFrame({"case_id": ["x"]}),
    )
    assert all(math.isnan(v) for v in sps.t.interval(0.95, 0, loc=0.5, scale=0.1))
    summary = case_level_summary(one)
    empty = summary[summary["ci_low"].isna()]
    assert set(empty["method"]) == {"t_case_means", "cr1", "wilson_effective_n"}
    assert empty["note"].str.endswith("; no interval: fewer than two cases").all()
    assert summary.loc[summary["method"] == "wilson_effective_n", "df"].isna().all()
    assert not summary.loc[summary["ci_low"].notna(), "note"].str.contains("no interval").any()


def test_case_level_summary_says_no_case_qualifies_rather_than_fewer_than_two(run) -> None:
    """retrieval-dense completed 4 of its 5 trials, so no case has the 5 evaluated attempts
    pass@5 / pass^5 need: no estimate at all, which "fewer than two cases" misdescribed."""
    attempts = run.attempts[run.attempts["variant_id"] == "retrieval-dense"]
    evaluated = attempts[attempts["status"] == "ok"].groupby("case_id", observed=True).size()
    assert evaluated.max() < 5  # (independently: no case reaches k = 5)
    summary = case_level_summary(run)
    rows = summary[(summary["variant_id"] == "retrieval-dense") & (summary["k"] == 5)]
    assert len(rows) and (rows["n_cases"] == 0).all() and rows["estimate"].isna().all()
    assert rows["note"].str.endswith("; no estimate: no cases qualify").all()


def test_case_level_summary_against_scipy_and_statsmodels(run: ExperimentRun) -> None:
    import statsmodels.api as sm
    from statsmodels.stats.proportion import proportion_confint

    summary = case_level_summary(run, confidence_level=0.95)
    means = naive_case_means(run)
    att = run.attempts[
        (run.attempts["status"].astype(str) != "trial_failed")
        & (run.attempts["variant_id"] == "large-v2")
    ]
    rows = summary[summary["variant_id"] == "large-v2"].set_index(["estimand", "k", "method"])
    t_row = rows.loc[("mean", pd.NA, "t_case_means")]
    m = means["large-v2"]
    low, high = sps.t.interval(0.95, len(m) - 1, loc=m.mean(), scale=sps.sem(m))
    assert (t_row["ci_low"], t_row["ci_high"]) == pytest.approx((low, min(high, 1.0)))

    y = att["passed"].astype(float).to_numpy()
    groups = att["case_index"].to_numpy()
    fit = sm.OLS(y, np.ones(len(y))).fit(
        cov_type="cluster", cov_kwds={"groups": groups}, use_t=True
    )
    cr = rows.loc[("mean", pd.NA, "cr1")]
    assert cr["standard_error"] == pytest.approx(fit.bse[0], rel=1e-10)

    pooled = rows.loc[("mean", pd.NA, "pooled_wilson")]
    want = proportion_confint(int(y.sum()), len(y), alpha=0.05, method="wilson")
    assert (pooled["ci_low"], pooled["ci_high"]) == pytest.approx(want, rel=1e-10)

    eff = rows.loc[("mean", pd.NA, "wilson_effective_n")]
    q = sps.t.ppf(0.975, len(m) - 1)
    n_eff = eff["effective_n"]
    want = proportion_confint(y.mean() * n_eff, n_eff, alpha=2 * sps.norm.sf(q), method="wilson")
    assert (eff["ci_low"], eff["ci_high"]) == pytest.approx(want, rel=1e-10)
    # cases differ a lot here, so the pooled interval is the narrowest
    assert pooled["ci_high"] - pooled["ci_low"] < eff["ci_high"] - eff["ci_low"]

    hat3 = rows.loc[("pass_hat_k", 3, "t_case_means")]
    counts = att.groupby("case_id", observed=True)["passed"].agg(["size", "sum"])
    per_case = [math.comb(int(c), 3) / math.comb(int(n), 3) for n, c in counts.to_numpy()]
    assert hat3["estimate"] == pytest.approx(np.mean(per_case))
    assert hat3["standard_error"] == pytest.approx(sps.sem(per_case))


def _small_run() -> ExperimentRun:
    """Two variants × five cases × three trials, built by hand: ``a`` fails so often that
    its t interval over cases leaves the range below 0, ``b`` passes so often that it leaves
    it above 1; case c4 of ``a`` lost its third attempt (a failed trial: not evaluated);
    ``score`` is a graded value in [0, 1] and ``latency_ms`` an unbounded one."""
    passed = {
        "a": [[1, 0, 0], [0, 0, 0], [0, 0, 1], [0, 0, 0], [1, 1, 0]],
        "b": [[1, 1, 1], [1, 1, 1], [1, 1, 0], [1, 1, 1], [0, 1, 1]],
    }
    rows = []
    for variant, table in passed.items():
        for i, values in enumerate(table):
            for t, p in enumerate(values):
                failed = variant == "a" and i == 4 and t == 2
                rows.append(
                    {
                        "variant_id": variant,
                        "trial": t + 1,
                        "case_id": f"c{i}",
                        "passed": bool(p),
                        "score": 0.25 * ((i + t) % 4) + 0.1 * p,
                        "latency_ms": 40.0 + 900.0 * ((i * 7 + t * 3) % 5 == 0),
                        "status": "trial_failed" if failed else "ok",
                    }
                )
    return ExperimentRun.from_frames(
        pd.DataFrame(rows),
        pd.DataFrame({"variant_id": ["a", "b"]}),
        pd.DataFrame({"case_id": [f"c{i}" for i in range(5)]}),
    )


def _one_way_icc(values: list[list[float]]) -> tuple[float, float]:
    """ANOVA ICC(1) of balanced groups (clamped at 0) and its design effect, by hand."""
    k = len(values[0])
    means = [sum(v) / k for v in values]
    grand = sum(means) / len(means)
    msb = k * sum((m - grand) ** 2 for m in means) / (len(values) - 1)
    msw = sum((x - m) ** 2 for v, m in zip(values, means, strict=True) for x in v) / (
        len(values) * (k - 1)
    )
    icc = max((msb - msw) / (msb + (k - 1) * msw), 0.0)
    return icc, 1 + (k - 1) * icc


def test_case_level_rows_of_a_small_run_by_hand() -> None:
    """Every interval row of the pass rate against scipy / statsmodels / hand arithmetic:
    the t rows clipped to [0, 1] at both ends, CR1 bounds on t_{G-1}, the design effect
    from a hand ANOVA, the degrees of freedom and counts of each row, and pass@2 / pass^3
    over the cases holding k evaluated attempts (found by the mutation run: only the upper
    clip, the CR1 standard error and pass^3 on the example were pinned)."""
    import statsmodels.api as sm
    from statsmodels.stats.proportion import proportion_confint

    run = _small_run()
    summary = case_level_summary(run, pass_k=[2, 3])
    att = run.attempts[run.attempts["status"].astype(str) == "ok"]
    for variant, clipped in (("a", "low"), ("b", "high")):
        sub = att[att["variant_id"] == variant]
        y = sub["passed"].astype(float).to_numpy()
        case = sub["case_id"].astype(str).to_numpy()
        by_case = sub.groupby("case_id", observed=True)["passed"]
        m = by_case.mean().to_numpy(float)
        rows = summary[summary["variant_id"] == variant].set_index(["estimand", "k", "method"])
        assert set(rows.index.get_level_values("method")) == {
            "t_case_means",
            "cr1",
            "beta_binomial",
            "wilson_effective_n",
            "pooled_wilson",
        }
        common = rows.xs("mean", level="estimand")
        assert (common["n_cases"] == 5).all() and (common["n_attempts"] == len(y)).all()
        assert (common["confidence_level"] == 0.95).all()

        t_row = rows.loc[("mean", pd.NA, "t_case_means")]
        low, high = sps.t.interval(0.95, 4, loc=m.mean(), scale=sps.sem(m))
        assert (low < 0) if clipped == "low" else (high > 1)  # the raw interval leaves [0, 1]
        assert t_row["estimate"] == pytest.approx(m.mean(), rel=1e-12)
        assert t_row["standard_error"] == pytest.approx(sps.sem(m), rel=1e-12)
        assert (t_row["ci_low"], t_row["ci_high"]) == pytest.approx(
            (max(low, 0.0), min(high, 1.0)), rel=1e-12
        )
        assert t_row["df"] == 4 and t_row["n_clusters"] == 5 and not t_row["zero_width"]
        assert t_row["note"] == "case-weighted mean; cases are the units"

        fit = sm.OLS(y, np.ones(len(y))).fit(
            cov_type="cluster", cov_kwds={"groups": pd.factorize(case)[0]}, use_t=True
        )
        q = sps.t.ppf(0.975, 4)
        cr = rows.loc[("mean", pd.NA, "cr1")]
        assert cr["estimate"] == pytest.approx(y.mean(), rel=1e-12)
        assert cr["standard_error"] == pytest.approx(fit.bse[0], rel=1e-10)
        assert (cr["ci_low"], cr["ci_high"]) == pytest.approx(
            (max(y.mean() - q * fit.bse[0], 0.0), min(y.mean() + q * fit.bse[0], 1.0)),
            rel=1e-10,
        )
        assert cr["df"] == 4 and cr["n_clusters"] == 5
        assert cr["note"] == "trial-weighted mean; CR1 clustered by case"

        bb = rows.loc[("mean", pd.NA, "beta_binomial")]
        assert bb["estimate"] == y.sum() / len(y) and bb["n_clusters"] == 5
        assert math.isnan(bb["df"]) and bool(bb["recommended"])
        assert bb["ci_low"] <= bb["estimate"] <= bb["ci_high"]

        if variant == "b":  # balanced: the design effect of a one-way ANOVA by hand
            _, deff = _one_way_icc([list(v) for v in by_case.apply(list)])
            assert common["design_effect"].to_numpy() == pytest.approx(deff, rel=1e-10)
            assert common["effective_n"].to_numpy() == pytest.approx(15 / deff, rel=1e-10)
        eff = rows.loc[("mean", pd.NA, "wilson_effective_n")]
        n_eff = eff["effective_n"]
        want = proportion_confint(
            y.mean() * n_eff, n_eff, alpha=2 * sps.norm.sf(q), method="wilson"
        )
        assert (eff["ci_low"], eff["ci_high"]) == pytest.approx(want, rel=1e-10)
        assert eff["df"] == 4 and eff["estimate"] == y.mean() and eff["n_clusters"] == 5

        pooled = rows.loc[("mean", pd.NA, "pooled_wilson")]
        want = proportion_confint(int(y.sum()), len(y), alpha=0.05, method="wilson")
        assert (pooled["ci_low"], pooled["ci_high"]) == pytest.approx(want, rel=1e-10)
        assert pooled["df"] == math.inf and pooled["estimate"] == y.mean()
        assert not rows["recommended"].drop(("mean", pd.NA, "beta_binomial")).any()

        sizes, passes = by_case.size().to_numpy(), by_case.sum().to_numpy()
        for estimand, k, per_case in (
            ("pass_at_k", 2, lambda n, c, k: 1 - math.comb(n - c, k) / math.comb(n, k)),
            ("pass_hat_k", 3, lambda n, c, k: math.comb(c, k) / math.comb(n, k)),
        ):
            values = [
                per_case(int(n), int(c), k) for n, c in zip(sizes, passes, strict=True) if n >= k
            ]
            row = rows.loc[(estimand, k, "t_case_means")]
            # by hand: scipy's t.interval warns on a zero scale (a's pass^3 is 0 everywhere)
            half = sps.t.ppf(0.975, len(values) - 1) * sps.sem(values)
            low, high = np.mean(values) - half, np.mean(values) + half
            assert row["estimate"] == pytest.approx(np.mean(values), rel=1e-12)
            assert (row["ci_low"], row["ci_high"]) == pytest.approx(
                (max(low, 0.0), min(high, 1.0)), rel=1e-12
            )
            assert row["n_cases"] == row["n_clusters"] == len(values)
            assert row["n_attempts"] == sum(int(n) for n in sizes if n >= k)
            assert row["df"] == len(values) - 1
        assert rows.loc[("pass_hat_k", 3, "t_case_means"), "n_cases"] == (
            4 if variant == "a" else 5
        )


def test_case_level_rows_of_graded_and_unbounded_evaluators() -> None:
    """A graded score gets only the t and CR1 rows (CR1 recommended), no pass@k rows and no
    proportion intervals; an unbounded latency's t interval is not clipped to [0, 1]."""
    run = _small_run()
    att = run.attempts[run.attempts["status"].astype(str) == "ok"]
    for evaluator in ("score", "latency_ms"):
        summary = case_level_summary(run, evaluator=evaluator)
        assert set(summary["method"]) == {"t_case_means", "cr1"}
        assert set(summary["estimand"]) == {"mean"}
        rec = summary[summary["recommended"]]
        assert set(rec["method"]) == {"cr1"} and len(rec) == 2
        assert rec["note"].str.endswith(" (recommended)").all()
        for variant in ("a", "b"):
            m = (
                att[att["variant_id"] == variant]
                .groupby("case_id", observed=True)[evaluator]
                .mean()
                .to_numpy(float)
            )
            low, high = sps.t.interval(0.95, 4, loc=m.mean(), scale=sps.sem(m))
            row = summary[
                (summary["variant_id"] == variant) & (summary["method"] == "t_case_means")
            ].iloc[0]
            if evaluator == "latency_ms":
                assert high > 1  # nothing to clip to: the raw interval is kept
            else:
                low, high = max(low, 0.0), min(high, 1.0)
            assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high), rel=1e-12)


def test_variance_decomposition_has_no_ratio_without_a_naive_standard_error() -> None:
    """The ratio of the case to the naive standard error is NaN when the naive one is 0
    (every attempt alike) or NaN (a single attempt), never a division by either."""

    def decomposed(cases: list[str], trials: list[int]) -> pd.DataFrame:
        rows = [
            {"variant_id": v, "trial": t, "case_id": c, "passed": v == "a"}
            for v in ("a", "b")
            for t in trials
            for c in cases
        ]
        run = ExperimentRun.from_frames(
            pd.DataFrame(rows),
            pd.DataFrame({"variant_id": ["a", "b"]}),
            pd.DataFrame({"case_id": cases}),
        )
        return variance_decomposition(run)

    alike = decomposed(["x", "y"], [1, 2])  # four attempts per variant, all alike
    single = decomposed(["x"], [1])  # one attempt per variant
    assert (alike["naive_standard_error"] == 0.0).all()
    assert single["naive_standard_error"].isna().all()
    assert alike["standard_error_ratio"].isna().all()
    assert single["standard_error_ratio"].isna().all()


def test_variance_decomposition_of_a_small_run_by_hand() -> None:
    """The standard errors, their ratio, the instability (mean within-case SD over cases of
    two or more attempts), the flaky share and both noise floors, by plain loops; case c4
    of ``a`` has two evaluated attempts, so its attempts per case are unbalanced."""
    run = _small_run()
    vd = variance_decomposition(run, confidence_level=0.9).set_index("variant_id")
    att = run.attempts[run.attempts["status"].astype(str) == "ok"]
    z = sps.norm.ppf(0.95)
    for variant in ("a", "b"):
        sub = att[att["variant_id"] == variant]
        groups = [
            g.astype(float).to_list() for _, g in sub.groupby("case_id", observed=True)["passed"]
        ]
        y = [x for g in groups for x in g]
        means = [sum(g) / len(g) for g in groups]
        n, total = len(groups), len(y)
        naive = float(np.std(y, ddof=1)) / math.sqrt(total)
        case_se = float(np.std(means, ddof=1)) / math.sqrt(n)
        sds = [
            math.sqrt(sum((x - sum(g) / len(g)) ** 2 for x in g) / (len(g) - 1))
            for g in groups
            if len(g) > 1
        ]
        within = sum((x - sum(g) / len(g)) ** 2 for g in groups for x in g) / (total - n)
        harmonic = n / sum(1 / len(g) for g in groups)
        row = vd.loc[variant]
        assert row["n_cases"] == n and row["n_attempts"] == total
        assert row["within_variance"] == pytest.approx(within, rel=1e-12)
        assert row["naive_standard_error"] == pytest.approx(naive, rel=1e-12)
        assert row["case_standard_error"] == pytest.approx(case_se, rel=1e-12)
        assert row["standard_error_ratio"] == pytest.approx(case_se / naive, rel=1e-12)
        assert row["instability"] == pytest.approx(np.mean(sds), rel=1e-12)
        assert row["flaky_share"] == pytest.approx(
            np.mean([0 < sum(g) < len(g) for g in groups]), rel=1e-12
        )
        assert row["noise_floor_trials"] == pytest.approx(harmonic, rel=1e-12)
        assert row["noise_floor_single_trial"] == pytest.approx(
            z * math.sqrt(2 * within / n), rel=1e-12
        )
        assert row["noise_floor_run"] == pytest.approx(
            z * math.sqrt(2 * within / (n * harmonic)), rel=1e-12
        )
    nf = noise_floor(run, trials=4, confidence_level=0.9).set_index("variant_id")
    for variant in ("a", "b"):
        w = vd.loc[variant, "within_variance"]
        assert nf.loc[variant, "trials"] == 4.0
        assert nf.loc[variant, "noise_floor"] == pytest.approx(
            z * math.sqrt(2 * w / (5 * 4)), rel=1e-12
        )


def _two_cases_of_one_attempt() -> ExperimentRun:
    """Two variants, each passing case x and failing case y in its one trial."""
    return ExperimentRun.from_frames(
        pd.DataFrame(
            {
                "variant_id": ["a", "a", "b", "b"],
                "trial": [1] * 4,
                "case_id": ["x", "y"] * 2,
                "passed": [True, False] * 2,
            }
        ),
        pd.DataFrame({"variant_id": ["a", "b"]}),
        pd.DataFrame({"case_id": ["x", "y"]}),
    )


def test_variance_decomposition_standard_errors_of_two_attempts_and_two_cases() -> None:
    """The smallest sample with a spread (two cases of one attempt) has both standard
    errors, by hand (found by the mutation run: a guard of ``> 2`` went unnoticed); no
    case has two attempts, so there is no instability, and no warning of an empty mean
    (found by the mutation run: a guard of ``>= 1`` went unnoticed)."""
    row = variance_decomposition(_two_cases_of_one_attempt()).iloc[0]
    se = math.sqrt(0.5) / math.sqrt(2)  # SD of (1, 0) is √½
    assert row["naive_standard_error"] == pytest.approx(se, rel=1e-12)
    assert row["case_standard_error"] == pytest.approx(se, rel=1e-12)
    assert math.isnan(row["instability"])


def test_wilson_on_the_effective_n_of_two_cases_has_one_degree_of_freedom() -> None:
    """Two cases are the fewest with a t quantile: df = 2 − 1 = 1, not NaN (found by the
    mutation run: guards of ``> 2`` and ``>= 3`` went unnoticed)."""
    summary = case_level_summary(_two_cases_of_one_attempt())
    rows = summary[summary["method"] == "wilson_effective_n"]
    assert len(rows) == 2 and (rows["n_cases"] == 2).all()
    assert (rows["df"] == 1.0).all()


def _b_never_evaluated() -> ExperimentRun:
    """Three cases of two trials: ``a`` passes each case once (the second trial of c0,
    the first of c1 ...); every trial of ``b`` failed, so no case of ``b`` was evaluated."""
    rows = [
        {
            "variant_id": variant,
            "trial": t + 1,
            "case_id": f"c{i}",
            "passed": variant == "a" and (i + t) % 2 == 1,
            "status": "ok" if variant == "a" else "trial_failed",
        }
        for variant in ("a", "b")
        for i in range(3)
        for t in range(2)
    ]
    return ExperimentRun.from_frames(
        pd.DataFrame(rows),
        pd.DataFrame({"variant_id": ["a", "b"]}),
        pd.DataFrame({"case_id": ["c0", "c1", "c2"]}),
    )


def test_instability_and_noise_floor_of_cases_of_two_attempts() -> None:
    """Every case of ``a`` has two attempts, one passed: within-case SD √½ each, so the
    instability is √½; σ²_w = 3·(2·¼)/(6 − 3) = ½ and K = 2 (found by the mutation run:
    an instability guard of ``> 2`` attempts went unnoticed)."""
    row = variance_decomposition(_b_never_evaluated()).set_index("variant_id").loc["a"]
    assert row["instability"] == pytest.approx(math.sqrt(0.5), rel=1e-12)
    assert row["within_variance"] == pytest.approx(0.5, rel=1e-12)
    assert row["noise_floor_trials"] == 2.0
    assert row["noise_floor_run"] == pytest.approx(
        sps.norm.ppf(0.975) * math.sqrt(2 * 0.5 / (3 * 2)), rel=1e-12
    )


def test_a_variant_with_no_evaluated_case_has_no_noise_floor_trials() -> None:
    """No case of ``b`` was evaluated: its within variance and floors are NaN, and so is
    the K its floor would be read at, in both frames (it was 1.0, a number of attempts per
    case no case had; found by the mutation run: 1.0 → 2.0 went unnoticed). A K the
    caller asks for is kept as asked, the floor still NaN."""
    run = _b_never_evaluated()
    b = variance_decomposition(run).set_index("variant_id").loc["b"]
    assert b["n_cases"] == 0 and math.isnan(b["within_variance"])
    assert math.isnan(b["noise_floor_trials"]) and math.isnan(b["noise_floor_run"])
    nf = noise_floor(run).set_index("variant_id")
    assert nf.loc["a", "trials"] == 2.0
    assert math.isnan(nf.loc["b", "trials"]) and math.isnan(nf.loc["b", "noise_floor"])
    asked = noise_floor(run, trials=3).set_index("variant_id")
    assert asked.loc["b", "trials"] == 3.0 and math.isnan(asked.loc["b", "noise_floor"])


def test_variance_decomposition_matches_pingouin(run: ExperimentRun) -> None:
    import pingouin as pg

    vd = variance_decomposition(run).set_index("variant_id")
    att = run.attempts[run.attempts["variant_id"] == "large-v2"].copy()
    att["y"] = att["passed"].astype(float)
    icc = pg.intraclass_corr(att, targets="case_id", raters="trial", ratings="y")
    want = float(icc.set_index("Type").loc["ICC(1,1)", "ICC"])
    row = vd.loc["large-v2"]
    assert row["icc"] == pytest.approx(max(want, 0.0), rel=1e-10)
    assert row["design_effect"] == pytest.approx(1 + 4 * row["icc"])
    assert row["effective_n"] == pytest.approx(70 / row["design_effect"])
    flaky = att.groupby("case_id", observed=True)["y"].mean()
    assert row["flaky_share"] == pytest.approx(((flaky > 0) & (flaky < 1)).mean())
    z = sps.norm.ppf(0.975)
    nf = noise_floor(run, trials=1).set_index("variant_id")
    assert nf.loc["large-v2", "noise_floor"] == pytest.approx(
        z * math.sqrt(2 * row["within_variance"] / 14)
    )


def test_noise_floor_of_unbalanced_cases_uses_their_harmonic_attempts() -> None:
    """Cases of 1 and of 10 attempts: the re-run difference of the mean of case means has
    variance 2σ²_w Σ(1/K_i)/n², by hand; K was the rounded mean (6), whose floor was
    √(6/1.82) times too small."""
    rows = []
    for i in range(10):
        for t in range(1 if i < 5 else 10):
            rows.append({"variant_id": "a", "trial": t + 1, "case_id": f"c{i}"})
            rows[-1]["passed"] = (i + t) % 3 == 0
    attempts = pd.DataFrame(rows)
    missing = [  # the cases' unrun trials, as failed ones (not evaluated)
        {"variant_id": "a", "trial": t + 1, "case_id": f"c{i}", "passed": False}
        for i in range(5)
        for t in range(1, 10)
    ]
    attempts = pd.concat([attempts, pd.DataFrame(missing).assign(status="trial_failed")])
    attempts["status"] = attempts["status"].fillna("ok")
    both = pd.concat([attempts, attempts.assign(variant_id="b")], ignore_index=True)
    uneven = ExperimentRun.from_frames(
        both,
        pd.DataFrame({"variant_id": ["a", "b"]}),
        pd.DataFrame({"case_id": [f"c{i}" for i in range(10)]}),
    )
    scored = attempts[attempts["status"] == "ok"].astype({"passed": float})
    groups = scored.groupby("case_id")["passed"]
    within = float(((scored["passed"] - groups.transform("mean")) ** 2).sum()) / (len(scored) - 10)
    k = groups.size().to_numpy(float)
    want = sps.norm.ppf(0.975) * math.sqrt(2 * within * np.sum(1 / k)) / 10
    nf = noise_floor(uneven).set_index("variant_id")
    assert nf.loc["a", "trials"] == pytest.approx(10 / np.sum(1 / k))
    assert nf.loc["a", "noise_floor"] == pytest.approx(want, rel=1e-12)


def test_case_labels_by_hand(run: ExperimentRun) -> None:
    from statsmodels.stats.proportion import proportion_confint

    labels = case_labels(run)
    for row in labels.head(30).itertuples():
        low, high = proportion_confint(row.passes, row.attempts, method="wilson")
        if row.passes == row.attempts:
            high = 1.0
        if row.passes == 0:
            low = 0.0
        assert (row.ci_low, row.ci_high) == pytest.approx((low, high), abs=1e-12)
        if low >= 0.5:
            want = "stable_pass"
        elif high <= 0.5:
            want = "stable_fail"
        else:
            want = "flaky" if 0 < row.passes < row.attempts else "undetermined"
        assert row.label == want
    jeffreys = case_labels(run, method="jeffreys")
    assert set(jeffreys["interval"]) == {"jeffreys"}
    with pytest.raises(InputError, match="not pass/fail"):
        case_labels(run, evaluator="latency_ms")


def test_labels_and_pass_rates_of_small_cells_by_hand() -> None:
    """No pass is no flip: 0 of 1 and 0 of 2 attempts are undetermined (Wilson's upper
    bound, from statsmodels, still above 0.5), 0 of 5 is a stable fail; 1 of 1 is
    undetermined, 3 of 4 flaky; an unscored cell has no pass rate. Found by the mutation
    run: a flip of ``passes >= 0``, and a pass rate of x·n, of x / max(n, 2), or 0 or NaN
    where nothing or one attempt was scored, went unnoticed."""
    from statsmodels.stats.proportion import proportion_confint

    attempts, passes = np.array([1, 2, 5, 0, 4, 1]), np.array([0, 0, 0, 0, 3, 1])
    frame = labels_from_counts(["a"], list("uvwxyz"), attempts, passes)
    want = []
    for x, n in zip(passes.tolist(), attempts.tolist(), strict=True):
        if n == 0:
            want.append("unscored")
            continue
        low, high = proportion_confint(x, n, method="wilson")
        flaky = "flaky" if 0 < x < n else "undetermined"
        want.append("stable_pass" if low >= 0.5 else "stable_fail" if high <= 0.5 else flaky)
    assert want == ["undetermined"] * 2 + ["stable_fail", "unscored", "flaky", "undetermined"]
    assert frame["label"].tolist() == want
    assert frame["flipped"].tolist() == [False] * 4 + [True, False]
    rates = frame["pass_rate"].tolist()
    assert rates[:3] + rates[4:] == [0.0, 0.0, 0.0, 0.75, 1.0] and math.isnan(rates[3])


def test_label_thresholds_at_the_ends_of_zero_to_one_are_accepted() -> None:
    """0 and 1 lie in [0, 1]: both are taken as either threshold, and the bounds compare
    inclusively (found by the mutation run: refusing 0 or 1, or a strict comparison with
    either threshold, went unnoticed). Wilson on one attempt: 1 of 1 is [0.21, 1], 0 of 1
    is [0, 0.79] (p̂ = 1 and p̂ = 0 give the ends exactly). A stable pass needs a lower
    bound of at least the pass threshold, a stable fail an upper bound of at most the fail
    threshold."""
    run = _two_cases_of_one_attempt()

    def labels(pass_threshold: float, fail_threshold: float) -> set[str]:
        frame = case_labels(run, pass_threshold=pass_threshold, fail_threshold=fail_threshold)
        assert len(frame) == 4
        return set(frame["label"])

    assert labels(1.0, 0.0) == {"undetermined"}  # no lower bound is 1, no upper bound 0
    assert labels(0.0, 1.0) == {"stable_pass"}  # every lower bound is at least 0
    assert labels(1.0, 1.0) == {"stable_fail"}  # every upper bound is at most 1


def test_evaluated_counts_by_hand() -> None:
    """Variant-major cells in suite order, each case's attempts less its variant's failed
    trials, floored at 0 (a variant whose every trial failed evaluated nothing), and a row
    naming a variant or a case outside the report's refused (found by the mutation run: a
    floor of 1 and a refusal only when both were unknown went unnoticed)."""
    cases = pd.DataFrame(
        {"variant_id": ["b", "a", "a"], "case_id": ["x", "y", "x"], "attempts": [2, 2, 2],
         "passes": [0, 1, 2]}
    )  # fmt: skip
    trials = pd.DataFrame({"variant_id": ["b", "b", "a"], "status": ["failed", "failed", "ok"]})
    attempts, passes = evaluated_counts(cases, trials, ["a", "b"], ["x", "y"])
    # (a, x), (a, y), (b, x), (b, y): b lost both its trials; (b, y) has no row
    assert attempts.tolist() == [2, 2, 0, 0] and passes.tolist() == [2, 1, 0, 0]
    for variant, case in (("c", "x"), ("a", "z")):
        unknown = pd.DataFrame(
            {"variant_id": [variant], "case_id": [case], "attempts": [1], "passes": [0]}
        )
        with pytest.raises(ValueError, match="outside the report's"):
            evaluated_counts(unknown, trials, ["a", "b"], ["x", "y"])


# --- planning ----------------------------------------------------------------------------------


def test_power_analysis_against_statsmodels(run: ExperimentRun) -> None:
    from statsmodels.stats.power import TTestPower

    pa = power_analysis(run, effect=0.1, alpha=0.05, power=0.8).set_index("candidate_variant_id")
    means = naive_case_means(run)
    d = (means["prompt-v2"] - means["baseline"]).dropna()
    sd = d.std(ddof=1)
    level = 0.05 / 4  # four candidates: Bonferroni planning level
    row = pa.loc["prompt-v2"]
    assert row["planned_sd"] == pytest.approx(sd)
    assert row["power"] == pytest.approx(TTestPower().power(0.1 / sd, len(d), level), rel=1e-8)
    needed = TTestPower().solve_power(effect_size=0.1 / sd, alpha=level, power=0.8)
    assert row["cases_needed"] == math.ceil(needed)
    assert row["mde"] == pytest.approx(
        TTestPower().solve_power(nobs=len(d), alpha=level, power=0.8) * sd, rel=1e-6
    )


def test_power_analysis_says_why_a_pilot_without_spread_plans_nothing(run: ExperimentRun) -> None:
    """Every attempt of every variant passed: the per-case differences' SD is 0 (numpy),
    so power and MDE are NaN, and the row says why rather than leave a silent NaN."""
    att = pd.DataFrame(
        {
            "variant_id": ["a"] * 5 + ["b"] * 5,
            "trial": [1] * 10,
            "case_id": [f"c{i}" for i in range(5)] * 2,
            "passed": [True] * 10,
        }
    )
    flat = ExperimentRun.from_frames(
        att, pd.DataFrame({"variant_id": ["a", "b"]}), pd.DataFrame({"case_id": att["case_id"][:5]})
    )
    assert np.std(np.zeros(5), ddof=1) == 0.0  # the differences, by hand
    row = power_analysis(flat, effect=0.1).iloc[0]
    assert math.isnan(row["mde"]) and math.isnan(row["power"]) and pd.isna(row["cases_needed"])
    assert row["note"].startswith("the pilot's per-case differences do not vary (SD 0")
    assert (power_analysis(run, effect=0.1)["note"] == "").all()


def test_more_trials_shrink_the_planned_sd_toward_omega(run: ExperimentRun) -> None:
    pa = power_analysis(run, trials=1000).set_index("candidate_variant_id")
    row = pa.loc["model-large"]
    assert row["planned_sd"] == pytest.approx(
        math.sqrt(
            row["between_difference_variance"]
            + (row["within_variance_baseline"] + row["within_variance_candidate"]) / 1000
        )
    )
    mde = minimum_detectable_effect(run, trials=1000).set_index("candidate_variant_id")
    assert (
        mde.loc["model-large", "mde"]
        < minimum_detectable_effect(run).set_index("candidate_variant_id").loc["model-large", "mde"]
    )


@pytest.mark.parametrize(
    ("call", "location"),
    [
        (lambda run: power_analysis(run, effect=0.1, power=1.0), "power"),
        (lambda run: power_analysis(run, effect=0.1, alpha=0.0), "alpha"),
        (
            lambda run: noninferiority_gate(
                paired_comparisons(run, correction="holm"), margin=0.05, alpha=1.5
            ),
            "alpha",
        ),
    ],
)
def test_a_level_outside_zero_and_one_names_its_argument(
    run: ExperimentRun, call: Callable, location: str
) -> None:
    with pytest.raises(InputError) as caught:
        call(run)
    assert caught.value.location == location
    # alpha has its own rule, at most 0.5 (a larger one is a confidence level given for it)
    rule = "> 0 and <= 0.5" if location == "alpha" else "strictly between 0 and 1"
    assert rule in caught.value.message


def test_a_pass_rate_effect_beyond_the_scale_is_refused(run: ExperimentRun) -> None:
    """effect=10 (meant as 10 pp) on a pass rate gave power 1.0 and 3 cases needed;
    trials_for_precision(half_width=5) one trial."""
    with pytest.raises(InputError) as caught:
        power_analysis(run, effect=10)
    assert caught.value.location == "effect"
    assert "beyond the scale of a proportion difference" in caught.value.message
    assert "0.1 for 10 pp" in str(caught.value)
    # the largest possible difference is still a question (and latency has no such scale)
    assert len(power_analysis(run, effect=-1.0))
    assert len(power_analysis(run, effect=250.0, evaluator="latency_ms"))
    # a target half-width of 5 (pp) asked for one trial whatever the data
    with pytest.raises(InputError, match=r"^half_width: half_width 5 is beyond the scale"):
        trials_for_precision(run, half_width=5)
    assert len(trials_for_precision(run, half_width=50.0, evaluator="latency_ms"))


def test_trials_for_precision_reaches_the_target(run: ExperimentRun) -> None:
    plan = trials_for_precision(run, half_width=0.12, cost_per_case=0.02)
    z = sps.norm.ppf(0.975)
    for row in plan.itertuples():
        if pd.isna(row.trials_needed):
            assert row.between_variance / row.cases > (0.12 / z) ** 2 - 1e-15 or True
            continue
        k = int(row.trials_needed)
        half = z * math.sqrt((row.between_variance + row.within_variance / k) / row.cases)
        assert half <= 0.12 + 1e-12
        if k > 1:
            worse = z * math.sqrt(
                (row.between_variance + row.within_variance / (k - 1)) / row.cases
            )
            assert worse > 0.12
        assert row.optimal_cases >= 8
    assert set(plan["cost_unit"]) == {"usd"}


def test_trials_for_precision_of_a_one_trial_pilot_is_not_already_precise() -> None:
    """One attempt per case: between- and within-case variance cannot be told apart (both
    NaN), and they were read as 0 — a current half-width of 0 and one trial on 8 cases
    enough. The case values' whole variance now counts as between cases."""
    passed = [True, False, True, True, False, False, True, False, True, True]
    one = ExperimentRun.from_frames(
        pd.DataFrame(
            {
                "variant_id": ["a"] * 10 + ["b"] * 10,
                "trial": [1] * 20,
                "case_id": [f"c{i}" for i in range(10)] * 2,
                "passed": passed + passed[::-1],
            }
        ),
        pd.DataFrame({"variant_id": ["a", "b"]}),
        pd.DataFrame({"case_id": [f"c{i}" for i in range(10)]}),
    )
    plan = trials_for_precision(one, half_width=0.1)
    row = plan[(plan["variant_id"] == "a") & (plan["estimand"] == "mean")].iloc[0]
    y = np.array(passed, dtype=float)
    z = sps.norm.ppf(0.975)
    assert row["current_half_width"] == pytest.approx(z * y.std(ddof=1) / math.sqrt(10))
    assert row["between_variance"] == pytest.approx(y.var(ddof=1))
    assert pd.isna(row["trials_needed"])  # only more cases narrow it
    assert row["optimal_cases"] == math.ceil(y.var(ddof=1) / (0.1 / z) ** 2)


def test_power_analysis_for_more_trials_from_a_one_trial_pilot_says_it_is_conservative() -> None:
    """One attempt per case: the planned SD for 5 trials is the pilot's own per-case
    difference SD (its noise cannot be separated), and the note now says so; a pilot of
    two trials shrinks it and has no such note."""
    passed = [True, False, True, True, False, False, True, False, True, True]
    other = [True, True, True, False, False, True, True, True, True, False]
    ids = [f"c{i}" for i in range(10)]

    def pilot(trials: int) -> ExperimentRun:
        rows = pd.DataFrame(
            {
                "variant_id": (["a"] * 10 + ["b"] * 10) * trials,
                "trial": np.repeat(np.arange(1, trials + 1), 20),
                "case_id": ids * 2 * trials,
                "passed": (passed + other) * trials if trials == 1 else
                          (passed + other) + (other + passed),
            }
        )  # fmt: skip
        variants = pd.DataFrame({"variant_id": ["a", "b"]})
        return ExperimentRun.from_frames(rows, variants, pd.DataFrame({"case_id": ids}))

    row = power_analysis(pilot(1), trials=5, effect=0.1).iloc[0]
    d = np.array(other, dtype=float) - np.array(passed, dtype=float)
    assert row["planned_sd"] == pytest.approx(d.std(ddof=1))
    assert row["note"].startswith("one attempt per case in the pilot")
    assert "not shrunk for 5 trials" in row["note"]
    assert power_analysis(pilot(1), effect=0.1).iloc[0]["note"] == ""  # as piloted
    assert power_analysis(pilot(1), trials=1, effect=0.1).iloc[0]["note"] == ""  # likewise
    assert power_analysis(pilot(2), trials=5, effect=0.1).iloc[0]["note"] == ""


def test_planning_states_no_mde_when_the_power_is_not_above_alpha(run: ExperimentRun) -> None:
    """At α = 0.5 a test finds even a zero change half the time: 30 % power is met by every
    change. The analysis says so (NaN, a note); the plan gave an MDE of 0.0 with no note,
    though a declared plan's MDE is meant to be the analysis's."""
    declared = with_comparisons(run, {"correction": "none", "alpha": 0.5, "power": 0.3})
    pc = paired_comparisons(declared, correction="manifest")
    assert pc["mde"].isna().all()
    plan = power_analysis(declared, power=0.3, effect=0.1)
    assert plan["mde"].isna().all()
    want = "no detectable-effect bound: the power asked for (30%) is not above the test's α = 0.5"
    assert (plan["note"] == want).all()
    # the power at the planned size is still a number: the chance of a significant result
    assert (plan["power"] > 0.5).all()
    assert minimum_detectable_effect(declared, power=0.3)["mde"].isna().all()
    # a power equal to the level is not above it either
    equal = power_analysis(declared, power=0.5)
    assert equal["mde"].isna().all()
    assert (equal["note"] == want.replace("(30%)", "(50%)")).all()
    # just above the level there is a bound again
    assert (power_analysis(declared, power=0.51)["mde"] > 0).all()


def test_planned_trials_default_to_the_pilots_mean_attempts(run: ExperimentRun) -> None:
    """Without ``trials`` the plan keeps the pilot's attempts per case: the mean of the two
    arms' (retrieval-dense lost trial 5 of 5: 4.5 against the baseline's 5)."""
    att = run.attempts[run.attempts["status"].astype(str) != "trial_failed"]
    per_case = att.groupby(["variant_id", "case_id"], observed=True).size()
    attempts = per_case.groupby(level="variant_id", observed=True).mean()
    plan = power_analysis(run).set_index("candidate_variant_id")
    for candidate, row in plan.iterrows():
        want = (attempts["baseline"] + attempts[candidate]) / 2
        assert row["planned_trials"] == pytest.approx(want)
    assert plan.loc["retrieval-dense", "planned_trials"] == 4.5


def test_a_pilot_with_one_arm_of_one_attempt_per_case_is_still_said_to_be_conservative() -> None:
    """Either arm without a second attempt per case leaves its noise inside the between-case
    spread: planning more trials says so, not only when both arms had one attempt."""
    ids = [f"c{i}" for i in range(10)]
    base = [True, False, True, True, False, False, True, False, True, True]
    cand = [True, True, True, False, False, True, True, True, True, False]
    # the baseline's second trial failed as a whole: one evaluated attempt per case
    rows = pd.DataFrame(
        {
            "variant_id": ["a"] * 20 + ["b"] * 20,
            "trial": [1] * 10 + [2] * 10 + [1] * 10 + [2] * 10,
            "case_id": ids * 4,
            "status": ["ok"] * 10 + ["trial_failed"] * 10 + ["ok"] * 20,
            "passed": base + [False] * 10 + cand + cand[::-1],
        }
    )
    pilot = ExperimentRun.from_frames(
        rows, pd.DataFrame({"variant_id": ["a", "b"]}), pd.DataFrame({"case_id": ids})
    )
    row = power_analysis(pilot, trials=5, effect=0.1).iloc[0]
    assert (row["trials_baseline"], row["trials_candidate"]) == (1.0, 2.0)
    assert row["note"].startswith("one attempt per case in the pilot")


# --- JSON blocks ----------------------------------------------------------------------------------


def test_report_blocks_are_strict_json_and_round_trip(run: ExperimentRun) -> None:
    config = resolve_comparisons(run.manifest, correction="holm", noninferiority_margin=0.05)
    blocks = blocks_of(run, config)
    text = orjson.dumps(blocks)
    assert b"NaN" not in text
    data = json.loads(text)
    paired = data["paired_comparisons"]
    assert paired["settings"]["correction"] == "holm"
    assert paired["settings"]["family_size"] == 19
    assert "family-wise" in paired["settings"]["controls"]
    assert paired["noninferiority"]["margin"] == 0.05
    assert isinstance(paired["noninferiority"]["passed"], bool)
    assert {e["dimension"] for e in paired["evaluators"]} == {
        "quality",
        "safety",
        "reliability",
        "latency",
        "cost",
    }
    frames = paired_frames_from_block(paired)
    original = paired_comparisons(run, correction="holm")
    back = frames["paired_comparisons"]
    np.testing.assert_allclose(back["adjusted_p_value"], original["adjusted_p_value"])
    assert back["significant"].tolist() == original["significant"].tolist()
    assert len(frames["noninferiority"]) == 4
    case_level = data["case_level"]
    assert set(case_level) == {
        "confidence_level",
        "summary",
        "variance",
        "labels",
        "flaky_case_ids",
        "label_counts",
    }
    assert sum(case_level["labels"]["baseline"].values()) == 14
    assert case_level["label_counts"] == []  # every case has expectations: the matrix's
    assert blocks_of(run).keys() == {"case_level"}


# --- integration ----------------------------------------------------------------------------------


def test_comparisons_declared_in_a_yaml_manifest(tmp_path: Path) -> None:
    import shutil

    import yaml

    folder = tmp_path / "exp"
    shutil.copytree(EXAMPLE, folder)
    manifest = yaml.safe_load((folder / "manifest.yaml").read_text())
    manifest["comparisons"] = {
        "correction": "holm",
        "evaluators": {"safety": None, "latency": None, "cost": None},
        "noninferiority": {"margin": 0.1},
    }
    (folder / "manifest.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    run = load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    pc = paired_comparisons(run, correction="manifest")
    assert set(pc["evaluator"]) == {"passed", "pass_hat_5"}
    assert list(pc.attrs["settings"]["without"]) == ["safety", "latency", "cost"]
    assert gate_passed(pc.attrs["noninferiority"]) is False
    manifest["comparisons"] = {"correction": "holm", "alpah": 0.1}
    (folder / "manifest.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    broken = with_comparisons(run, manifest["comparisons"])
    broken = dataclasses.replace(
        broken, manifest=dataclasses.replace(broken.manifest, path=folder / "manifest.yaml")
    )
    with pytest.raises(InputError, match=r"exp/manifest\.yaml: comparisons: unknown key 'alpah'"):
        paired_comparisons(broken, correction="manifest")


def test_parquet_round_trip_gives_the_same_frame(run: ExperimentRun, tmp_path: Path) -> None:
    from agenticlens_frames.frames import read_parquet

    restored = read_parquet(run.to_parquet(tmp_path / "tables"))
    pd.testing.assert_frame_equal(
        paired_comparisons(restored, correction="holm"), paired_comparisons(run, correction="holm")
    )


def test_paired_outputs_match_the_individual_functions(run: ExperimentRun) -> None:
    from agenticlens_frames.paired import paired_outputs

    config = resolve_comparisons(run.manifest, correction="bonferroni")
    frames, paired = paired_outputs(run, config)
    pd.testing.assert_frame_equal(
        frames["paired_comparisons"], paired_comparisons(run, correction="bonferroni")
    )
    pd.testing.assert_frame_equal(frames["variance_decomposition"], variance_decomposition(run))
    assert isinstance(paired, PairedAnalysis)
    assert paired.comparisons is frames["paired_comparisons"]
    assert blocks_of(run, config).keys() == {"case_level", "paired_comparisons"}


def test_command_line_settings_are_checked_before_any_scoring(tmp_path: Path) -> None:
    import shutil

    import yaml

    from agenticlens_frames.paired import comparisons_from_cli

    folder = _undeclared_copy(tmp_path / "exp")
    shutil.rmtree(folder / "trials")  # nothing to score: the refusal must come first
    manifest, suite = folder / "manifest.yaml", folder / "suite.yaml"
    assert comparisons_from_cli(manifest, suite) is None
    config = comparisons_from_cli(manifest, suite, correction="holm", noninferiority_margin=0.02)
    assert config is not None and config.source == "cli"
    with pytest.raises(InputError, match=r"^--correction: paired comparisons need"):
        comparisons_from_cli(manifest, suite, noninferiority_margin=0.02)
    data = yaml.safe_load(manifest.read_text())
    data["comparisons"] = {"correction": "holm", "limits": {"max_configurations": 3}}
    manifest.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(InputError, match=r"comparisons\.limits\.max_configurations"):
        comparisons_from_cli(manifest, suite)
    with pytest.raises(InputError, match=r"comparisons\.correction: the experiment fixed"):
        comparisons_from_cli(manifest, suite, correction="none", allow_large=True)
    assert comparisons_from_cli(manifest, suite, allow_large=True).correction == "holm"


def test_a_saved_report_refuses_other_settings(run: ExperimentRun, tmp_path: Path) -> None:
    from agenticlens_frames.paired import check_saved_report, noninferiority_failures

    report = tmp_path / "report.json"
    holm = analyze(run, comparisons=resolve_comparisons(run.manifest, correction="holm"))
    first = report_blocks(holm)
    fingerprint = first["paired_comparisons"]["fingerprint"]
    check_saved_report(report, fingerprint)  # nothing saved yet
    report.write_bytes(orjson.dumps({"schema_version": "1.1", **first}))
    check_saved_report(report, fingerprint)
    other = blocks_of(run, resolve_comparisons(run.manifest, correction="bonferroni"))
    with pytest.raises(InputError, match="correction: 'holm' -> 'bonferroni'"):
        check_saved_report(report, other["paired_comparisons"]["fingerprint"])
    check_saved_report(report, None)  # no paired comparisons now: nothing to hold against
    assert noninferiority_failures(holm.paired_frames.get("noninferiority")) is None
    gated = analyze(
        run,
        comparisons=resolve_comparisons(
            run.manifest, correction="holm", noninferiority_margin=0.05
        ),
    )
    gate_block = report_blocks(gated)["paired_comparisons"]["noninferiority"]
    failed = noninferiority_failures(gated.paired_frames["noninferiority"])
    assert failed == [
        c["candidate_variant_id"] for c in gate_block["candidates"] if not c["passed"]
    ]
    gate = paired_comparisons(run, correction="holm", noninferiority_margin=0.05).attrs[
        "noninferiority"
    ]
    assert failed == gate.loc[~gate["passed"], "candidate_variant_id"].tolist()


def test_a_large_saved_report_is_checked_from_its_head_and_tail(
    run: ExperimentRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agenticlens_frames.paired import check_saved_report, lock

    first = blocks_of(run, resolve_comparisons(run.manifest, correction="holm"))
    other = blocks_of(run, resolve_comparisons(run.manifest, correction="bonferroni"))
    report = tmp_path / "report.json"
    body = {
        "schema_version": "1.1",
        "experiment_name": run.manifest.name,
        "experiment_version": run.manifest.version,
        "variants": [{"output": '"paired_comparisons": {"fingerprint": 1}' * 50}] * 200,
        **first,
    }
    report.write_bytes(orjson.dumps(body, option=orjson.OPT_INDENT_2))
    monkeypatch.setattr(lock, "FULL_PARSE_LIMIT", 4096)
    identity = (run.manifest.name, run.manifest.version)
    new, changed = (b["paired_comparisons"]["fingerprint"] for b in (first, other))
    check_saved_report(report, new, identity)
    with pytest.raises(InputError, match="correction: 'holm' -> 'bonferroni'"):
        check_saved_report(report, changed, identity)
    check_saved_report(report, changed, ("another-experiment", "1"))  # not this experiment


# --- issue 14: corners and smaller defects ----------------------------------------------------


def _independent_beta_binomial_bounds(passes, attempts, level=0.95):
    """Posterior bounds of μ by a different quadrature: ρ by the inverse CDF of its
    Beta(0.3, 0.8) prior at uniform midpoints, a midpoint μ grid, scipy's betabinom."""
    mu = (np.arange(4000) + 0.5) / 4000
    rho = sps.beta.ppf((np.arange(400) + 0.5) / 400, 0.3, 0.8)
    kappa = 1 / rho - 1
    a = mu[:, None] * kappa[None, :]
    b = (1 - mu)[:, None] * kappa[None, :]
    log_lik = sum(sps.betabinom.logpmf(c, k, a, b) for c, k in zip(passes, attempts, strict=True))
    post = np.exp(log_lik - log_lik.max()).sum(axis=1)
    cdf = np.concatenate([[0.0], np.cumsum(post) / post.sum()])
    edges = np.arange(4001) / 4000
    tail = (1 - level) / 2
    return float(np.interp(tail, cdf, edges)), float(np.interp(1 - tail, cdf, edges))


@pytest.mark.parametrize(
    ("passes", "attempts"),
    [
        ([3, 3, 3, 3, 3, 0, 2, 2, 1, 3], [3] * 10),
        ([5, 5, 4, 5, 5, 5, 5, 5, 5, 5, 5, 5], [5] * 12),  # near-perfect, one flaky case
        ([1, 0, 2, 4, 4, 3, 0, 1], [4, 4, 4, 4, 5, 5, 5, 5]),  # unbalanced attempts
    ],
)
def test_beta_binomial_interval_against_an_independent_quadrature(passes, attempts) -> None:
    from agenticlens_frames import stats_paired

    got = stats_paired.beta_binomial_interval(passes, attempts)
    low, high = _independent_beta_binomial_bounds(passes, attempts)
    estimate = sum(passes) / sum(attempts)
    assert got.estimate == estimate
    assert got.ci_low == pytest.approx(min(low, estimate), abs=2e-3)
    assert got.ci_high == pytest.approx(max(high, estimate), abs=2e-3)


def test_case_level_from_counts_by_hand() -> None:
    """From a saved report's case matrix: each variant's failed trials come off every one
    of its cases' attempts, then the beta-binomial interval with cases as units (checked
    against the independent quadrature), one recommended row per variant."""
    from agenticlens_frames.paired.case_level import case_level_from_counts

    cases = pd.DataFrame(
        {
            "variant_id": ["a"] * 4 + ["b"] * 4,
            "case_id": ["w", "x", "y", "z"] * 2,
            "attempts": [3] * 8,
            "passes": [2, 0, 1, 2, 3, 3, 1, 2],
        }
    )
    trials = pd.DataFrame(
        {
            "variant_id": ["a", "a", "a", "b", "b", "b"],
            "status": ["succeeded"] * 2 + ["failed"] + ["succeeded"] * 3,
        }
    )
    frame = case_level_from_counts(cases, trials, confidence_level=0.9)
    assert frame["variant_id"].astype(str).tolist() == ["a", "b"]
    for variant, evaluated, passes in (("a", [2] * 4, [2, 0, 1, 2]), ("b", [3] * 4, [3, 3, 1, 2])):
        row = frame[frame["variant_id"] == variant].iloc[0]
        assert row["estimate"] == sum(passes) / sum(evaluated)
        assert row["n_attempts"] == sum(evaluated) and row["n_cases"] == row["n_clusters"] == 4
        low, high = _independent_beta_binomial_bounds(passes, evaluated, level=0.9)
        assert row["ci_low"] == pytest.approx(min(low, row["estimate"]), abs=2e-3)
        assert row["ci_high"] == pytest.approx(max(high, row["estimate"]), abs=2e-3)
        assert row["confidence_level"] == 0.9 and row["method"] == "beta_binomial"
        assert bool(row["recommended"]) and not bool(row["zero_width"])


def test_case_level_summary_marks_the_recommended_row(run: ExperimentRun) -> None:
    summary = case_level_summary(run)
    rec = summary[summary["recommended"]]
    # exactly one recommended row per variant: the beta-binomial mean
    assert rec["variant_id"].astype(str).tolist() == list(run.manifest.variant_ids)
    assert set(rec["method"]) == {"beta_binomial"} and set(rec["estimand"]) == {"mean"}
    assert (rec["ci_low"] <= rec["estimate"]).all() and (rec["estimate"] <= rec["ci_high"]).all()
    means = naive_case_means(run)
    att = run.attempts[run.attempts["status"].astype(str) != "trial_failed"]
    for row in rec.itertuples():
        sub = att[att["variant_id"] == row.variant_id]
        passes = sub.groupby("case_id", observed=True)["passed"].sum().to_numpy()
        counts = sub.groupby("case_id", observed=True)["passed"].count().to_numpy()
        low, high = _independent_beta_binomial_bounds(passes, counts)
        assert row.ci_low == pytest.approx(min(low, row.estimate), abs=2e-3)
        assert row.ci_high == pytest.approx(max(high, row.estimate), abs=2e-3)
        assert row.n_cases == means[row.variant_id].notna().sum()


def test_case_level_summary_uses_the_cluster_in_every_row(run: ExperimentRun) -> None:
    import statsmodels.api as sm

    summary = case_level_summary(run, cluster="topic")
    # the intervals that cannot use clusters are not offered; the recommended one is CR1
    assert not summary["method"].isin(["beta_binomial", "wilson_effective_n"]).any()
    rec = summary[summary["recommended"]]
    assert set(rec["method"]) == {"cr1"} and len(rec) == len(run.manifest.variant_ids)
    topics = {c.id: c.metadata["topic"] for c in run.suite.cases}
    means = naive_case_means(run)
    m = means["large-v2"].dropna()
    fit = sm.OLS(m.to_numpy(), np.ones(len(m))).fit(
        cov_type="cluster",
        cov_kwds={"groups": pd.factorize(pd.Series([topics[c] for c in m.index.astype(str)]))[0]},
        use_t=True,
    )
    rows = summary[summary["variant_id"] == "large-v2"].set_index(["estimand", "method"])
    t_row = rows.loc[("mean", "t_case_means")]
    assert t_row["standard_error"] == pytest.approx(fit.bse[0], rel=1e-10)
    assert t_row["n_clusters"] == len(set(topics.values()))
    for estimand in ("pass_at_k", "pass_hat_k"):
        assert (rows.loc[estimand]["n_clusters"] <= len(set(topics.values()))).all()
        # the pass@k rows say their clusters, and only when there are some (found by the
        # mutation run: the note's clause could be dropped or added unnoticed)
        assert (
            rows.loc[estimand]["note"]
            .str.contains("; CR1 clustered by metadata field 'topic'", regex=False)
            .all()
        )
    plain = case_level_summary(run)
    passk = plain[plain["estimand"].isin(["pass_at_k", "pass_hat_k"])]
    assert len(passk) and not passk["note"].str.contains("clustered", regex=False).any()


def _all_pass(run: ExperimentRun, variant: str) -> ExperimentRun:
    att = run.attempts.copy()
    mine = att["variant_id"].astype(str) == variant
    att["passed"] = att["passed"].where(~mine, True)
    return dataclasses.replace(run, attempts=att)


def test_zero_width_intervals_are_flagged(run: ExperimentRun) -> None:
    summary = case_level_summary(_all_pass(run, "large-v2"))
    rows = summary[(summary["variant_id"] == "large-v2") & (summary["estimand"] == "mean")]
    rows = rows.set_index("method")
    for method in ("t_case_means", "cr1"):
        assert rows.loc[method, "ci_low"] == rows.loc[method, "ci_high"] == 1.0
        assert rows.loc[method, "zero_width"] and "not certainty" in rows.loc[method, "note"]
    # the recommended interval keeps its width
    assert not rows.loc["beta_binomial", "zero_width"]
    assert rows.loc["beta_binomial", "ci_low"] < 1.0 == rows.loc["beta_binomial", "ci_high"]
    t_like = summary[summary["method"].isin(["t_case_means", "cr1"])]
    assert t_like["zero_width"].equals(t_like["ci_low"] == t_like["ci_high"])
    assert not summary.loc[~summary["method"].isin(["t_case_means", "cr1"]), "zero_width"].any()


def test_paired_intervals_are_clipped_to_the_parameter_range(run: ExperimentRun) -> None:
    att = run.attempts.copy()
    cases = list(run.suite.case_ids)
    variant = att["variant_id"].astype(str)
    odd = att["case_id"].astype(str) == cases[0]
    # baseline fails every case but one, the candidate passes every case but that one
    att.loc[variant == "baseline", "passed"] = odd[variant == "baseline"]
    att.loc[variant == "prompt-v2", "passed"] = ~odd[variant == "prompt-v2"]
    changed = dataclasses.replace(run, attempts=att)
    pc = paired_comparisons(changed, correction="holm")
    row = pc[(pc["candidate_variant_id"] == "prompt-v2") & (pc["evaluator"] == "passed")].iloc[0]
    d = (naive_case_means(changed)["prompt-v2"] - naive_case_means(changed)["baseline"]).dropna()
    low, high = sps.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=sps.sem(d))
    assert high > 1  # the unclipped t interval leaves the range of a difference
    assert row["ci_low"] == pytest.approx(low) and row["ci_high"] == 1.0
    bounded = pc[pc["unit"].isin(["proportion", "score"])]
    assert ((bounded["ci_low"] >= -1) & (bounded["ci_high"] <= 1)).all()


def test_one_trial_does_not_count_pass_hat_1_twice(run: ExperimentRun) -> None:
    att = run.attempts[run.attempts["trial"] == 1].reset_index(drop=True)
    checks = run.checks[run.checks["trial"] == 1].reset_index(drop=True)
    manifest = dataclasses.replace(run.manifest, trial_count=1)
    one = dataclasses.replace(run, attempts=att, checks=checks, manifest=manifest)
    pc = paired_comparisons(one, correction="holm")
    assert not pc["evaluator"].isin(["pass_hat_1", "pass_at_1"]).any()
    omitted = [o for o in pc.attrs["omitted"] if o["evaluator"] == "pass_hat_1"]
    assert len(omitted) == 4 and all("not tested twice" in o["reason"] for o in omitted)
    # the family is the tests actually made: one per (candidate, remaining evaluator)
    assert set(pc["family_size"]) == {len(pc)}
    assert int(pc["p_value"].notna().sum()) == len(pc)


def test_degenerate_row_p_value_is_exact_and_repeatable(run: ExperimentRun) -> None:
    changed = _all_pass(_all_pass(run, "baseline"), "prompt-v2")
    first = paired_comparisons(changed, correction="holm")
    again = paired_comparisons(changed, correction="holm")
    row = first[(first["candidate_variant_id"] == "prompt-v2") & (first["evaluator"] == "passed")]
    assert bool(row["degenerate"].iloc[0]) and row["p_value"].iloc[0] == 1.0
    assert first["p_value"].equals(again["p_value"])


def test_planning_uses_the_analysis_alpha_per_test(run: ExperimentRun) -> None:
    declared = with_comparisons(run, {"correction": "holm"})
    plan = power_analysis(declared)
    pc = paired_comparisons(declared, correction="manifest")
    quality = pc[pc["evaluator"] == "passed"].set_index("candidate_variant_id")
    tests = int(pc["p_value"].notna().sum())
    assert plan["alpha_per_test"].to_numpy() == pytest.approx(0.05 / tests)
    for row in plan.itertuples():
        # same α, same σ_d, same n: the planned MDE is the one the analysis reports
        assert row.mde == pytest.approx(quality.loc[row.candidate_variant_id, "mde"], rel=1e-9)
    # an undeclared run plans over the candidates (Bonferroni), and says so
    bare = power_analysis(run)
    assert bare["alpha_per_test"].to_numpy() == pytest.approx(0.05 / 4)
    assert set(bare["correction"]) == {"bonferroni"}


def test_planning_uses_the_declared_power(run: ExperimentRun) -> None:
    """A manifest declaring power: 0.9 had its analysis's MDEs at 90 % and its plan's at
    80 % (power_analysis always took 0.8), though the plan is to give the analysis's MDE."""
    from statsmodels.stats.power import TTestPower

    declared = with_comparisons(run, {"correction": "holm", "power": 0.9})
    plan = power_analysis(declared)
    pc = paired_comparisons(declared, correction="manifest")
    quality = pc[pc["evaluator"] == "passed"].set_index("candidate_variant_id")
    assert set(plan["target_power"]) == {0.9}
    for row in plan.itertuples():
        assert row.mde == pytest.approx(quality.loc[row.candidate_variant_id, "mde"], rel=1e-9)
        reached = TTestPower().power(
            effect_size=row.mde / row.planned_sd,
            nobs=row.planned_cases,
            alpha=row.alpha_per_test,
            alternative="two-sided",
        )
        assert reached == pytest.approx(0.9, abs=1e-6)
    # a power given to the plan still wins; an undeclared run plans at 80 %
    assert set(power_analysis(declared, power=0.7)["target_power"]) == {0.7}
    assert set(power_analysis(run)["target_power"]) == {0.8}
    assert set(minimum_detectable_effect(declared)["mde"]) == set(plan["mde"])


def test_icc_not_estimable_is_nan_with_a_note(run: ExperimentRun) -> None:
    vd = variance_decomposition(_all_pass(run, "large-v2")).set_index("variant_id")
    assert math.isnan(vd.loc["large-v2", "icc"]) and "not estimable" in vd.loc["large-v2", "note"]
    others = vd.drop(index="large-v2")
    assert others["icc"].notna().all() and (others["note"] == "").all()


def test_no_detectable_change_is_stated_when_the_power_is_not_above_alpha(run) -> None:
    """At level α a test finds even a zero change with probability α: asked for 30% power
    at α = 0.5, every change qualifies. The MDE was 0.0 and the note read "could not detect
    effects smaller than 0.0 pp"; now there is no bound, and the note says why."""
    pc = paired_comparisons(run, correction="none", alpha=0.5, power=0.3)
    assert pc["mde"].isna().all()
    unjudged = pc[~pc["significant"].astype(bool)]
    assert (
        len(unjudged)
        and unjudged["note"]
        .str.startswith(
            "no detectable-effect bound: the power asked for (30%) is not above the test's α = 0.5"
        )
        .all()
    )
    # a power equal to the level is not above it either: no bound (the MDE was 0)
    level = paired_comparisons(run, correction="none", alpha=0.5, power=0.5)
    assert level["mde"].isna().all()
    assert (
        level.loc[~level["significant"].astype(bool), "note"]
        .str.startswith("no detectable-effect bound: the power asked for (50%) is not above")
        .all()
    )
    # a power that rounds to 100% keeps its digits
    strict = paired_comparisons(run, correction="holm", power=0.999)
    assert strict["note"].str.contains(r"\(99\.9% power at α").any()
    assert not strict["note"].str.contains("100% power").any()


def test_a_lock_from_a_run_that_scored_nothing_takes_the_versions_of_the_first_that_does(
    tmp_path: Path,
) -> None:
    # A run whose every trial failed (a target returning the wrong type) recorded its
    # evaluators as 'passed@': the fixed target's run was refused as a changed evaluator
    # version, although no number had been seen, by the lock and by the saved report that
    # `experiment run` writes by default.
    lock = tmp_path / "comparisons.lock.json"
    unscored = {"correction": "holm", "evaluators": {"quality": "passed@", "cost": "cost_usd@"}}
    scored = {
        "correction": "holm",
        "evaluators": {"quality": "passed@0.9.0", "cost": "cost_usd@measured"},
    }
    check_unchanged(unscored, scored)
    enforce_lock(lock, unscored)
    assert enforce_lock(lock, scored) is False
    assert read_lock(lock) == scored  # the versions are fixed from now on
    with pytest.raises(InputError, match=r"'passed@0\.9\.0'} -> .*'passed@1\.0'"):
        enforce_lock(
            lock, dict(scored, evaluators={**scored["evaluators"], "quality": "passed@1.0"})
        )
    with pytest.raises(InputError, match="evaluators"):
        check_unchanged(unscored, dict(scored, evaluators={"quality": "score@0.9.0"}))


def test_resolve_comparisons_given_the_run_points_to_its_manifest(run: ExperimentRun) -> None:
    # The run itself (not run.manifest) failed with "'ExperimentRun' object has no
    # attribute 'comparisons'".
    with pytest.raises(InputError, match=r"^manifest: resolve_comparisons\(\) takes the") as info:
        resolve_comparisons(run, correction="holm")  # type: ignore[arg-type]
    assert "got ExperimentRun (pass run.manifest)" in str(info.value)
    with pytest.raises(InputError, match=r"got str \(pass load_manifest\("):
        resolve_comparisons("manifest.yaml", correction="holm")  # type: ignore[arg-type]
