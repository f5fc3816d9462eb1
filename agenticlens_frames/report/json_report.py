"""The JSON report: AgenticLens 0.10's experiment report schema 1.1, rendered from frames.

Same keys, order and numbers as the package's ``--save`` output (so its own
``agenticlens experiment report`` loads ours), except the deliberate fixes listed in
docs/compatibility.md. What we add lives under new keys: ``target``, ``timeout_seconds``,
``description`` and ``metadata`` on each variant, and a top-level ``agenticlens_frames``
block (settings, provenance, fixes applied). Nothing here computes a statistic.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd

from ..analysis import SUMMARY_METRICS, ExperimentAnalysis

__all__ = ["build_report", "created_at", "write_json_report"]

REPORT_SCHEMA_VERSION = "1.1"
TRIAL_REPORT_SCHEMA_VERSION = "1.0"


def created_at() -> str:
    """UTC timestamp for ``created_at``; ``SOURCE_DATE_EPOCH`` makes it reproducible.

    Examples
    --------
    >>> import os
    >>> os.environ["SOURCE_DATE_EPOCH"] = "1767225600"
    >>> created_at()
    '2026-01-01T00:00:00Z'
    >>> del os.environ["SOURCE_DATE_EPOCH"]
    """
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch is not None and epoch.strip().isdigit():
        return datetime.fromtimestamp(int(epoch), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _num(value: Any) -> Any:
    """A JSON-ready number: NaN and ±inf become null (the package's serialiser does so)."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    return value


def _summary_block(row: pd.Series, metric: str, confidence_level: float) -> dict | None:
    if int(row[f"{metric}_count"]) == 0:
        return None
    return {
        "count": int(row[f"{metric}_count"]),
        "mean": _num(row[f"{metric}_mean"]),
        "median": _num(row[f"{metric}_median"]),
        "p95": _num(row[f"{metric}_p95"]),
        "standard_deviation": _num(row[f"{metric}_standard_deviation"]),
        "coefficient_of_variation": _num(row[f"{metric}_coefficient_of_variation"]),
        "confidence_interval": {
            "lower": _num(row[f"{metric}_ci_low"]),
            "upper": _num(row[f"{metric}_ci_high"]),
            "confidence_level": confidence_level,
            "method": "normal_approximation",
        },
    }


def _variant_summary(row: pd.Series, analysis: ExperimentAnalysis) -> dict[str, Any]:
    cl = analysis.confidence_level
    ks = analysis.pass_k
    summary: dict[str, Any] = {
        "attempted_trials": int(row["attempted_trials"]),
        "completed_trials": int(row["completed_trials"]),
        "failed_trials": int(row["failed_trials"]),
        "successful_trials": int(row["successful_trials"]),
        "trial_success_rate": _num(row["trial_success_rate"]),
    }
    for metric in SUMMARY_METRICS:
        summary[metric] = _summary_block(row, metric, cl)
    interval = None
    if int(row["case_attempts"]):
        interval = {
            "lower": _num(row["case_pass_rate_ci_low"]),
            "upper": _num(row["case_pass_rate_ci_high"]),
            "confidence_level": cl,
            "method": "wilson",
        }
    summary.update(
        case_attempts=int(row["case_attempts"]),
        case_passes=int(row["case_passes"]),
        case_pass_rate=_num(row["case_pass_rate"]),
        case_pass_rate_interval=interval,
        pass_at_k={str(k): _num(row[f"pass_at_{k}"]) for k in ks if _num(row[f"pass_at_{k}"]) is not None},
        pass_hat_k={
            str(k): _num(row[f"pass_hat_{k}"]) for k in ks if _num(row[f"pass_hat_{k}"]) is not None
        },
        consistency_rate=_num(row["consistency_rate"]),
        flaky_case_ids=list(row["flaky_case_ids"]),
        priced_trials=int(row["priced_trials"]),
    )
    return summary


def _case_results(cases: pd.DataFrame, ks: tuple[int, ...]) -> list[dict[str, Any]]:
    cols = {c: cases[c].tolist() for c in cases.columns if c not in ("variant_id",)}
    out = []
    for i in range(len(cases)):
        attempts = cols["attempts"][i]
        out.append(
            {
                "case_id": str(cols["case_id"][i]),
                "case_name": cols["case_name"][i],
                "attempts": attempts,
                "passes": cols["passes"][i],
                "pass_rate": cols["pass_rate"][i],
                "pass_at_k": {str(k): cols[f"pass_at_{k}"][i] for k in ks if k <= attempts},
                "pass_hat_k": {str(k): cols[f"pass_hat_{k}"][i] for k in ks if k <= attempts},
                "mean_score": _num(cols["mean_score"][i]),
                "score_standard_deviation": _num(cols["score_standard_deviation"][i]),
                "consistent": bool(cols["consistent"][i]),
            }
        )
    return out


class _TrialReports:
    """Builds the per-trial EvaluationReport dicts from the attempts and checks tables."""

    def __init__(self, analysis: ExperimentAnalysis, stamp: str, *, lean: bool) -> None:
        run = analysis.run
        self.stamp = stamp
        self.lean = lean
        self.suite = run.suite
        self.trials = analysis.trials.set_index(["variant_id", "trial"])
        att = run.attempts
        self.att = {
            c: att[c].tolist()
            for c in (
                "passed",
                "status",
                "output",
                "trace_id",
                "latency_ms",
                "cost_usd",
                "cost_source",
                "target_attempts",
                "error",
                "case_index",
            )
        }
        self.att["variant"] = att["variant_id"].cat.codes.tolist()
        self.att["trial"] = att["trial"].tolist()
        self.att_start = self._starts(att["variant_id"].cat.codes.to_numpy(), att["trial"].to_numpy())
        chk = run.checks
        self.chk = {
            c: chk[c].tolist()
            for c in (
                "name",
                "metric",
                "value",
                "passed",
                "required",
                "skipped",
                "explanation",
                "evaluator_type",
                "evaluator",
                "evaluator_version",
            )
        }
        # Checks are sorted like attempts; n_checks gives each attempt's slice.
        n_checks = att["n_checks"].to_numpy()
        self.chk_start = np.concatenate([[0], np.cumsum(n_checks)]).tolist()
        self.live = any(v.target_kind != "recorded" for v in run.manifest.variants)
        self.case_tags = [list(c.tags) for c in run.suite.cases]
        self.case_meta = [c.metadata for c in run.suite.cases]
        self.case_names = [c.name for c in run.suite.cases]
        self.case_ids = list(run.suite.case_ids)

    @staticmethod
    def _starts(variant: np.ndarray, trial: np.ndarray) -> dict[tuple[int, int], tuple[int, int]]:
        n = len(variant)
        if n == 0:
            return {}
        change = np.ones(n, dtype=bool)
        change[1:] = (variant[1:] != variant[:-1]) | (trial[1:] != trial[:-1])
        starts = np.flatnonzero(change)
        ends = np.append(starts[1:], n)
        return {
            (int(variant[s]), int(trial[s])): (int(s), int(e))
            for s, e in zip(starts, ends, strict=True)
        }

    def _scores(self, attempt: int) -> list[dict[str, Any]]:
        c = self.chk
        out = []
        for j in range(self.chk_start[attempt], self.chk_start[attempt + 1]):
            name = c["name"][j]
            metadata: dict[str, Any] = {}
            if name == "target_call" and c["evaluator"][j] == "agentic_evals.builtin":
                metadata = {
                    "status": self.att["status"][attempt] if self.att["status"][attempt] != "target_error" else "error",
                    "attempts": _num(self.att["target_attempts"][attempt]),
                    "error": self.att["error"][attempt],
                }
            version = c["evaluator_version"][j]
            out.append(
                {
                    "name": name,
                    "metric": c["metric"][j],
                    "value": c["value"][j],
                    "passed": c["passed"][j],
                    "required": c["required"][j],
                    "skipped": c["skipped"][j],
                    "explanation": c["explanation"][j],
                    "evaluator_type": c["evaluator_type"][j],
                    "evaluator": c["evaluator"][j],
                    "evaluator_version": None if _is_missing(version) else version,
                    "metadata": metadata,
                }
            )
        return out

    def report(self, variant_code: int, variant_id: str, trial: int) -> dict[str, Any]:
        a = self.att
        start, end = self.att_start[(variant_code, trial)]
        row = self.trials.loc[(variant_id, trial)]
        cases = []
        tag_rows: dict[str, list[int]] = {}
        metric_scores: dict[str, list[tuple[float, bool, bool]]] = {}
        cost_sources: Counter[str] = Counter()
        for i in range(start, end):
            ci = a["case_index"][i]
            status = a["status"][i]
            ok = status == "ok"
            cost = _num(a["cost_usd"][i])
            if cost is not None:
                source = a["cost_source"][i]
                cost_sources["unspecified" if _is_missing(source) else source] += 1
            scores = self._scores(i)
            for s in scores:
                metric_scores.setdefault(s["metric"], []).append(
                    (s["value"], s["passed"], s["skipped"])
                )
            for tag in dict.fromkeys(self.case_tags[ci]):
                tag_rows.setdefault(tag, []).append(i)
            if self.lean:
                continue
            target_status = None
            if self.live:
                target_status = {"target_error": "error"}.get(status, status)
            cases.append(
                {
                    "case_id": self.case_ids[ci],
                    "case_name": self.case_names[ci],
                    "passed": a["passed"][i],
                    "scores": scores,
                    "output": a["output"][i] if not _is_missing(a["output"][i]) else "",
                    "trace_id": a["trace_id"][i] if ok else "",
                    "latency_ms": a["latency_ms"][i] if ok else 0.0,
                    "cost_usd": cost,
                    "cost_source": (None if _is_missing(a["cost_source"][i]) else a["cost_source"][i])
                    if cost is not None
                    else None,
                    "sample_available": ok,
                    "target_status": target_status,
                    "target_attempts": _num(a["target_attempts"][i]) if self.live else None,
                    "target_error": None if _is_missing(a["error"][i]) or ok else a["error"][i],
                    "tags": list(self.case_tags[ci]),
                    "metadata": self.case_meta[ci],
                }
            )
        metrics = {}
        for metric in sorted(metric_scores):
            entries = metric_scores[metric]
            live_entries = [e for e in entries if not e[2]]
            passed = sum(e[1] for e in live_entries)
            values = [e[0] for e in live_entries]
            metrics[metric] = {
                "total": len(live_entries),
                "passed": passed,
                "failed": len(live_entries) - passed,
                "skipped": len(entries) - len(live_entries),
                "pass_rate": passed / len(live_entries) if live_entries else None,
                "average_score": sum(values) / len(values) if values else None,
            }
        tags = {}
        for tag in sorted(tag_rows):
            rows = tag_rows[tag]
            passed = sum(a["passed"][i] for i in rows)
            values = [
                self.chk["value"][j]
                for i in rows
                for j in range(self.chk_start[i], self.chk_start[i + 1])
                if not self.chk["skipped"][j]
            ]
            tags[tag] = {
                "total_cases": len(rows),
                "passed_cases": passed,
                "failed_cases": len(rows) - passed,
                "pass_rate": passed / len(rows),
                "average_score": sum(values) / len(values) if values else None,
            }
        live_block = None
        if self.live:
            statuses = [a["status"][i] for i in range(start, end)]
            ids = [self.case_ids[a["case_index"][i]] for i in range(start, end)]
            timed = [cid for cid, s in zip(ids, statuses, strict=True) if s == "timed_out"]
            errored = [cid for cid, s in zip(ids, statuses, strict=True) if s == "target_error"]
            live_block = {
                "total_cases": end - start,
                "ok_cases": statuses.count("ok"),
                "retried_cases": sum(
                    (_num(a["target_attempts"][i]) or 1) > 1 for i in range(start, end)
                ),
                "timed_out_cases": len(timed),
                "error_cases": len(errored),
                "timed_out_case_ids": timed,
                "error_case_ids": errored,
            }
        latency = row["average_latency_ms"]
        if not math.isfinite(latency):  # no case had a known latency: keep the schema valid
            latency = row["average_latency_ms_package"]
        return {
            "schema_version": TRIAL_REPORT_SCHEMA_VERSION,
            "suite_name": self.suite.name,
            "suite_version": self.suite.version,
            "created_at": self.stamp,
            "summary": {
                "total_cases": int(row["total_cases"]),
                "passed_cases": int(row["passed_cases"]),
                "failed_cases": int(row["failed_cases"]),
                "pass_rate": _num(row["pass_rate"]),
                "average_score": _num(row["average_score"]),
                "total_cost_usd": _num(row["total_cost_usd"]),
                "priced_cases": int(row["priced_cases"]),
                "cost_sources": dict(sorted(cost_sources.items())),
                "average_latency_ms": _num(latency),
                "metrics": metrics,
                "tags": tags,
                "judge": None,
                "live": live_block,
            },
            "cases": cases,
        }


def _is_missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def build_report(analysis: ExperimentAnalysis, *, lean: bool = False) -> dict[str, Any]:
    """The report as a dict in the package's key order (plus our added keys).

    Parameters
    ----------
    analysis
        From :func:`~agenticlens_frames.analyze`.
    lean
        Leave out the per-case records of each trial report (``cases: []``); every
        statistic, summary and trial summary stays. A 5 000-case report shrinks from
        hundreds of MB to a few MB.
    """
    run = analysis.run
    m = run.manifest
    stamp = created_at()
    trials = _TrialReports(analysis, stamp, lean=lean)
    vs = analysis.variants.set_index(analysis.variants["variant_id"].astype(str))
    cm = analysis.cases
    tri = run.trials
    variants = []
    for code, spec in enumerate(m.variants):
        row = vs.loc[spec.id]
        trial_rows = tri[tri["variant_id"] == spec.id].sort_values("trial")
        trial_list = []
        for t, status, error in zip(
            trial_rows["trial"].tolist(),
            trial_rows["status"].tolist(),
            trial_rows["error_message"].tolist(),
            strict=True,
        ):
            succeeded = status == "succeeded"
            trial_list.append(
                {
                    "trial_index": t,
                    "status": status,
                    "report": trials.report(code, spec.id, t) if succeeded else None,
                    "error_message": None if _is_missing(error) else error,
                }
            )
        summary = _variant_summary(row, analysis)
        variants.append(
            {
                "variant_id": spec.id,
                "variant_name": spec.name,
                "target_kind": spec.target_kind,
                "factors": dict(spec.factors),
                "pareto_optimal": bool(row["pareto_optimal"]),
                "trials": trial_list,
                "summary": summary,
                "cases": _case_results(cm[cm["variant_id"] == spec.id], analysis.pass_k),
                # Added keys (fix B13): what ran, so a report can be traced back.
                "target": spec.target,
                "timeout_seconds": spec.timeout_seconds,
                "description": spec.description,
                "metadata": dict(spec.metadata),
            }
        )
    comparisons = []
    for c in analysis.comparisons.to_dict("records"):
        def delta(metric: str, c: dict[str, Any] = c) -> dict[str, Any] | None:
            if _is_missing(c[f"{metric}_regressed"]):
                return None
            return {
                "absolute": _num(c[f"{metric}_delta"]),
                "relative": _num(c[f"{metric}_delta_relative"]),
                "regressed": bool(c[f"{metric}_regressed"]),
            }

        comparisons.append(
            {
                "baseline_variant_id": c["baseline_variant_id"],
                "candidate_variant_id": c["candidate_variant_id"],
                "pass_rate_delta": delta("pass_rate"),
                "average_score_delta": delta("average_score"),
                "average_latency_ms_delta": delta("average_latency_ms"),
                "total_cost_usd_delta": delta("total_cost_usd"),
                "changed_factors": c["changed_factors"],
                "case_pass_rate_delta": _num(c["case_pass_rate_delta"]),
                "case_pass_rate_p_value": _num(c["case_pass_rate_p_value"]),
                "statistically_significant": None
                if _is_missing(c["statistically_significant"])
                else bool(c["statistically_significant"]),
                "regressed_case_ids": list(c["regressed_case_ids"]),
                "improved_case_ids": list(c["improved_case_ids"]),
                "warnings": list(c["warnings"]),
            }
        )
    factor_levels = [
        {
            "factor": f["factor"],
            "value": f["value"],
            "variant_ids": list(f["variant_ids"]),
            "mean_pass_rate": _num(f["mean_pass_rate"]),
            "mean_average_score": _num(f["mean_average_score"]),
            "mean_latency_ms": _num(f["mean_latency_ms"]),
            "mean_cost_usd": _num(f["mean_cost_usd"]),
            "mean_trial_success_rate": _num(f["mean_trial_success_rate"]),
        }
        for f in analysis.factor_levels.to_dict("records")
    ]
    from .. import __version__

    report: dict[str, Any] = {
        "schema_version": REPORT_SCHEMA_VERSION,
        "experiment_name": m.name,
        "experiment_version": m.version,
        "suite_name": run.suite.name,
        "suite_version": run.suite.version,
        "baseline_variant_id": m.baseline_variant_id,
        "trial_count": m.trial_count,
        "random_seed": m.random_seed,
        "confidence_level": analysis.confidence_level,
        "regression_threshold": analysis.regression_threshold,
        "pass_k": list(analysis.pass_k),
        "minimum_trials": m.minimum_trials,
        "randomization": {
            "random_seed": m.random_seed,
            "shuffled": m.random_seed is not None,
            "execution_order": [[v, t] for v, t in analysis.execution_order],
        },
        "created_at": stamp,
        "variants": variants,
        "comparisons": comparisons,
        "pareto_frontier_variant_ids": list(analysis.pareto_frontier),
        "factor_levels": factor_levels,
        "case_ids": list(run.suite.case_ids),
        "warnings": list(analysis.warnings),
        "agenticlens_frames": {
            "version": __version__,
            "experiment_id": run.experiment_id,
            "lean": lean,
            "latency_missing": analysis.latency_missing,
            "manifest_metadata": dict(m.metadata),
            "max_workers": m.max_workers,
            "evaluators": dict(run.evaluator_versions),
            "deliberate_fixes": ["B1", "B2", "B3", "B4", "B5", "B8", "B13"],
            **analysis.extras,
        },
    }
    return report


def write_json_report(
    analysis: ExperimentAnalysis, path: str | Path, *, lean: bool = False
) -> Path:
    """Write the report to ``path`` (parents created), atomically.

    Examples
    --------
    >>> import tempfile, json
    >>> from agenticlens_frames import load_experiment, analyze
    >>> result = analyze(load_experiment("data/support/manifest.yaml",
    ...                                  "data/support/suite.yaml"))
    >>> out = write_json_report(result, tempfile.mkdtemp() + "/report.json", lean=True)
    >>> json.loads(out.read_text())["schema_version"]
    '1.1'
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    data = orjson.dumps(build_report(analysis, lean=lean), option=orjson.OPT_INDENT_2)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(target)
    return target
