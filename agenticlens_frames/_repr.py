"""Rich (``_repr_html_``) and plain (``__repr__``) displays of runs and analyses.

Self-contained HTML fragments in the great_tables manner: a ``<div>`` with a random id,
its own scoped ``<style>``, no script and no external asset; every user string escaped.
:class:`~agenticlens_frames.frames.ExperimentRun` and
:class:`~agenticlens_frames.analysis.ExperimentAnalysis` delegate to these functions.
"""

from __future__ import annotations

import uuid
from html import escape
from typing import TYPE_CHECKING, Any, Protocol

from ._values import (
    NO_EVALUATED_ATTEMPT,
    frontier_share,
    is_missing,
    missing_interval_reason,
    pass_rate_unit,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "analysis_repr",
    "analysis_repr_html",
    "regressed_labels",
    "run_repr_html",
    "verdict_lead",
]

#: The AgenticLens regression flags of a ``comparisons`` row, with their names in words.
REGRESSION_FLAGS = (
    ("pass rate", "pass_rate_regressed"),
    ("score", "average_score_regressed"),
    ("latency", "average_latency_ms_regressed"),
    ("cost", "total_cost_usd_regressed"),
)


def regressed_labels(comparison: dict[str, Any]) -> list[str]:
    """The names of the metrics a ``comparisons`` row flags as regressed, in words.

    Examples
    --------
    >>> regressed_labels({"pass_rate_regressed": True, "average_score_regressed": False,
    ...                   "average_latency_ms_regressed": None, "total_cost_usd_regressed": True})
    ['pass rate', 'cost']
    """
    return [label for label, key in REGRESSION_FLAGS if comparison[key] is True]


# What the displays read, named here so that this module imports neither the tables nor
# the analysis: both call into it, never the other way round.
class ExperimentRun(Protocol):
    """The parts of :class:`~agenticlens_frames.frames.ExperimentRun` shown."""

    @property
    def manifest(self) -> Any: ...
    @property
    def suite(self) -> Any: ...
    @property
    def experiment_id(self) -> str: ...
    @property
    def attempts(self) -> pd.DataFrame: ...
    @property
    def checks(self) -> pd.DataFrame: ...
    @property
    def variants(self) -> pd.DataFrame: ...
    @property
    def cases(self) -> pd.DataFrame: ...


class ExperimentAnalysis(Protocol):
    """The parts of :class:`~agenticlens_frames.analysis.ExperimentAnalysis` shown."""

    @property
    def run(self) -> object | None: ...
    @property
    def info(self) -> dict[str, Any]: ...
    @property
    def variants(self) -> pd.DataFrame: ...
    @property
    def comparisons(self) -> pd.DataFrame: ...
    @property
    def warnings(self) -> list[str]: ...
    @property
    def confidence_level(self) -> float: ...
    @property
    def pareto_frontier(self) -> list[str]: ...


_STYLE = """
#{id} {{ font: 13px/1.4 system-ui, sans-serif; }}
#{id} table {{ border-collapse: collapse; margin: 4px 0 8px; }}
#{id} th, #{id} td {{ padding: 3px 8px; border-bottom: 1px solid rgba(128,128,128,.3);
  text-align: left; vertical-align: top; }}
#{id} th {{ font-size: 11px; opacity: .75; }}
#{id} .muted {{ opacity: .7; font-size: 12px; }}
#{id} .bad {{ color: #c0392b; }} #{id} .good {{ color: #1d7f4e; }}
"""


def _e(value: Any) -> str:
    return escape(str(value), quote=True)


def _pct(value: Any) -> str:
    return "n/a" if is_missing(value) else f"{value:.1%}"


def _num(value: Any, spec: str) -> str:
    return "n/a" if is_missing(value) else format(value, spec)


def _points(value: Any) -> str:
    """A pass-rate change in percentage points, as every table states one (not the
    relative-looking "+2.9%")."""
    return "n/a" if is_missing(value) else f"{100 * value:+.1f} pp"


def _wrap(body: str) -> str:
    fid = f"alf-{uuid.uuid4().hex[:10]}"
    return f"<div id='{fid}'><style>{_STYLE.format(id=fid)}</style>{body}</div>"


def run_repr_html(run: ExperimentRun) -> str:
    """HTML summary of an :class:`~agenticlens_frames.frames.ExperimentRun`: sizes,
    attempt statuses and the variants with their factors.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> "support-agent-upgrade" in run_repr_html(run)
    True
    """
    m = run.manifest
    status = run.attempts["status"].astype(str).value_counts()
    statuses = ", ".join(f"{_e(k)}: {int(v)}" for k, v in status.items())
    factor_cols = [c for c in run.variants.columns if c.startswith("factor_")]
    head = "".join(f"<th>{_e(c.removeprefix('factor_'))}</th>" for c in factor_cols)
    rows = "".join(
        f"<tr><td><b>{_e(v['variant_id'])}</b>{' (baseline)' if v['is_baseline'] else ''}</td>"
        f"<td>{_e(v['variant_name'])}</td><td>{_e(v['target_kind'])}</td>"
        + "".join(f"<td>{'' if is_missing(v[c]) else _e(v[c])}</td>" for c in factor_cols)
        + "</tr>"
        for v in run.variants.to_dict("records")
    )
    return _wrap(
        f"<b>ExperimentRun</b> {_e(run.experiment_id)} · suite {_e(run.suite.name)} "
        f"{_e(run.suite.version)}<div class='muted'>{len(run.variants)} variants × "
        f"{m.trial_count} trials × {len(run.cases)} cases = {len(run.attempts)} attempts, "
        f"{len(run.checks)} checks · {statuses}</div>"
        f"<table><tr><th>variant</th><th>name</th><th>target</th>{head}</tr>{rows}</table>"
        "<div class='muted'>Tables: attempts, checks, trials, variants, cases · "
        "<code>analyze(run)</code> for the result frames.</div>"
    )


def _frontier_words(v: dict[str, Any]) -> str:
    """After the variant's id: on the Pareto frontier (with the share of bootstrap
    resamples that put it there), or off it in some resamples.

    Examples
    --------
    >>> _frontier_words({"pareto_optimal": True, "p_frontier": 0.5855})
    ' · Pareto (59% of resamples)'
    >>> _frontier_words({"pareto_optimal": False, "p_frontier": 0.3665})
    ' · off the Pareto frontier (on it in 37% of resamples)'
    >>> _frontier_words({"pareto_optimal": False, "p_frontier": 0.001})
    ' · off the Pareto frontier (on it in &lt;1% of resamples)'
    >>> _frontier_words({"pareto_optimal": False})
    ''
    """
    share = frontier_share(v.get("p_frontier"))
    share = None if share is None else escape(share)  # "<1%" is text, not markup
    if v["pareto_optimal"]:
        return f" · Pareto ({share} of resamples)" if share else " · Pareto"
    if share in (None, "0%"):
        return ""
    return f" · off the Pareto frontier (on it in {share} of resamples)"


def analysis_repr_html(
    a: ExperimentAnalysis,
    headline: pd.DataFrame | None = None,
    omitted: str = "",
    stopped: tuple[str, str] | None = None,
    gate: tuple[bool, str, list[str]] | None = None,
    judges: str = "",
) -> str:
    """HTML summary of an :class:`~agenticlens_frames.analysis.ExperimentAnalysis`: the
    verdicts with ``omitted`` under them (the comparisons left out, in words:
    :func:`~agenticlens_frames.paired.verdicts.omitted_statement`), the variant table led
    by ``headline`` (the case-level pass rates of
    :func:`~agenticlens_frames.paired.verdicts.headline_pass_rates`, when there are any),
    then AgenticLens's pooled numbers and comparisons, labelled as such, and the warnings.
    ``stopped``, in a run the rule watched: the stopping section's HTML and the verdicts' title
    (:mod:`agenticlens_frames.early_stopping`, read by the caller: this module
    imports nothing of ours). ``gate``: the non-inferiority gates in words, (passed,
    headline, one line per (candidate, dimension)) of
    :func:`~agenticlens_frames.paired.gate.gate_statement`; a failed gate comes before the
    verdicts, a passed one after them, as on every surface. ``judges``: what the LLM
    judges' noise does to the verdicts (:func:`~agenticlens_frames.analysis
    .judge_verdict_note`), said under them as on every surface ("" without judges).

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> "Pareto" in analysis_repr_html(a)
    True
    """
    info = a.info
    # The verdicts first (case-level, paired, under the declared correction), as rows of
    # the verdict frame; this module imports nothing of ours, so it reads them as written.
    verdicts = getattr(a, "verdicts", None)
    lead = ""
    if verdicts is not None and len(verdicts):
        style = {"better": "good", "worse": "bad"}
        lead = (
            "<table class='verdicts'><tr><th>verdict</th><th>candidate − baseline, case by "
            "case</th></tr>"
            + "".join(
                f"<tr><td class='{style.get(str(r['verdict']), '')}'>{_e(r['verdict'])}</td>"
                f"<td>{_e(r['statement'])}</td></tr>"
                for r in verdicts.to_dict("records")
            )
            + "</table>"
        )
    if omitted:
        # A comparison without a row is said under the table, as on every other surface:
        # a candidate missing a dimension is not one that showed no difference.
        lead += f"<div class='muted'>{_e(omitted)}</div>"
    if verdicts is not None:
        for key in ("missing", "source", "how_to_declare"):
            if verdicts.attrs.get(key):
                lead += f"<div class='muted'>{_e(verdicts.attrs[key])}</div>"
    # After an early stop the stopping decision is the inferential statement: it leads, in
    # the page's section, and the fixed-sample verdicts under it are titled descriptive, as
    # on every other surface (the display showed them as the run's verdicts, unlabelled).
    if judges:
        # The judges' line under the verdicts, as the console, the page and the explorer
        # say it: the display's verdicts said nothing of the judges' noise or agreement.
        lead += f"<div class='muted'>{_e(judges)}</div>"
    if gate is not None:
        # A failed gate blocks shipping (the command line exits 5 on it): it leads the
        # verdicts, whose "no detectable difference" rows would read as reassurance above
        # it; a passed one follows them (the page's and the console's order).
        passed, gate_headline, details = gate
        said = (
            f"<div class='{'good' if passed else 'bad'}'><b>{_e(gate_headline)}</b></div>"
            + "".join(f"<div class='muted'>{_e(line)}</div>" for line in details)
        )
        lead = lead + said if passed else said + lead
    if stopped is not None:
        section, title = stopped
        lead = f"{section}<div><b>{_e(title)}</b></div>{lead}"
    # The pass rate to read leads the variant table: the case-level interval (cases as the
    # unit) when the analysis has one; AgenticLens's pooled Wilson interval goes to the
    # labelled compatibility section (a saved AgenticLens report has only that one).
    records = [] if headline is None else headline.to_dict("records")
    lead_rates = {str(r["variant_id"]): r for r in records}
    level = f"{a.confidence_level:.0%}"

    def pass_rate(v: dict[str, Any]) -> str:
        h = lead_rates.get(str(v["variant_id"]))
        if h is None and lead_rates:
            # No case-level row for this variant alone (it completed no trial): not the
            # pooled number under the case-level header (the compatible table has it).
            return _e(NO_EVALUATED_ATTEMPT)
        if h is None:
            return (
                f"{_pct(v['case_pass_rate'])} <span class='muted'>"
                f"[{_pct(v['case_pass_rate_ci_low'])}, {_pct(v['case_pass_rate_ci_high'])}]"
                "</span> †"
            )
        if is_missing(h["ci_low"]):
            # Why there is none (one cluster), in the words of the JSON's note: not
            # "[n/a, n/a]".
            return (
                f"{_pct(h['estimate'])} <span class='muted'>"
                f"({_e(missing_interval_reason(h))})</span>"
            )
        return (
            f"{_pct(h['estimate'])} <span class='muted'>[{_pct(h['ci_low'])}, "
            f"{_pct(h['ci_high'])}]</span>"
        )

    rows = "".join(
        f"<tr><td><b>{_e(v['variant_id'])}</b>{' (baseline)' if v['is_baseline'] else ''}"
        f"{_frontier_words(v)}</td>"
        f"<td>{pass_rate(v)}</td>"
        f"<td>{_num(v['average_score_mean'], '.3f')}</td>"
        f"<td>{_num(v['average_latency_ms_mean'], ',.1f')} ms</td>"
        f"<td>{_num(v['total_cost_usd_mean'], '.4f')}</td>"
        f"<td>{_pct(v['trial_success_rate'])}</td><td>{int(v['n_flaky_cases'])}</td></tr>"
        for v in a.variants.to_dict("records")
    )
    if lead_rates:
        # Under a declared cluster the interval's unit is the cluster (CR1), not the case.
        unit = pass_rate_unit(records)
        rate_head = f"pass rate [{level} CI, {unit} as the unit]"
        rate_note = (
            f"Pass rate: mean over the evaluated attempts; its interval treats {unit} as the "
            "unit. Trial success: share of trials in which every case passed."
        )
        pooled = "".join(
            f"<tr><td>{_e(v['variant_id'])}</td><td>{_pct(v['case_pass_rate'])} "
            f"<span class='muted'>[{_pct(v['case_pass_rate_ci_low'])}, "
            f"{_pct(v['case_pass_rate_ci_high'])}]</span></td></tr>"
            for v in a.variants.to_dict("records")
        )
        pooled = (
            "<table><tr><th>variant</th><th>case pass rate [pooled Wilson]</th></tr>"
            f"{pooled}</table>"
        )
    else:
        rate_head = "case pass rate [pooled Wilson] †"
        rate_note = (
            "† AgenticLens's case pass rate with a pooled Wilson interval that treats "
            "attempts as independent (no case-level numbers here). Trial success: share of "
            "trials in which every case passed."
        )
        pooled = ""
    comps = ""
    if len(a.comparisons):
        items = []
        for c in a.comparisons.to_dict("records"):
            regressed = regressed_labels(c)
            items.append(
                f"<tr><td>{_e(c['candidate_variant_id'])}</td>"
                f"<td>{_points(c['case_pass_rate_delta'])}</td>"
                f"<td>{_num(c['case_pass_rate_p_value'], '.3f')}</td>"
                f"<td>{_e(', '.join(regressed)) or 'none'}</td></tr>"
            )
        comps = (
            f"<table><tr><th>vs {_e(info.get('baseline_variant_id'))}</th><th>Δ case pass rate"
            "</th><th>z-test p</th><th>flagged by its rule</th></tr>" + "".join(items) + "</table>"
        )
    warnings = "".join(f"<li>{_e(w)}</li>" for w in a.warnings)
    source = "saved report" if a.run is None else "tidy tables"
    compatible = (
        "<div class='muted'>AgenticLens-compatible numbers (attempts treated as independent; "
        f"not a verdict).</div>{pooled}{comps}"
        if pooled or comps
        else ""
    )
    return _wrap(
        f"<b>ExperimentAnalysis</b> {_e(info.get('experiment_name'))} "
        f"{_e(info.get('experiment_version'))} · suite {_e(info.get('suite_name'))} "
        f"{_e(info.get('suite_version'))}<div class='muted'>{info.get('trial_count')} trials "
        f"per variant · confidence {a.confidence_level:.0%} · from {source}</div>"
        f"{lead}"
        f"<table><tr><th>variant</th><th>{rate_head}</th><th>score</th>"
        "<th>latency</th><th>cost / trial</th><th>trial success</th><th>flaky</th></tr>"
        f"{rows}</table><div class='muted'>{rate_note}</div>"
        f"{compatible}" + (f"<ul class='muted'>{warnings}</ul>" if warnings else "")
    )


def analysis_repr(
    a: ExperimentAnalysis,
    early_stop: str | None = None,
    gate: tuple[bool, str, list[str]] | None = None,
) -> str:
    """Plain one-line repr; works for analyses loaded from a saved report (``run=None``).

    The verdicts come first, with the correction they are under (None: nothing is called
    significant), as on every other surface; the frontier (AgenticLens's, on means) after.
    ``early_stop``: the reason of an early stop, which then leads (the verdicts that follow
    are descriptive). ``gate``: the non-inferiority gates in words (passed, headline, rows:
    :func:`~agenticlens_frames.paired.gate.gate_statement`); a failed gate comes before the
    verdicts, after the stop, and a passed one after them (docs/statistics.md, "Where a
    gate is said").

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> analysis_repr(a)  # doctest: +NORMALIZE_WHITESPACE
    "ExperimentAnalysis('support-agent-upgrade@1', variants=5, correction='holm',
     verdicts='6 worse, 13 no detectable difference',
     frontier=['baseline', 'prompt-v2', 'large-v2'], warnings=2)"
    """
    info = a.info
    name = f"{info.get('experiment_name')}@{info.get('experiment_version')}"
    lead = verdict_lead(getattr(a, "verdicts", None), early_stop, gate)
    return (
        f"ExperimentAnalysis({name!r}, variants={len(a.variants)}, {lead}"
        f"frontier={a.pareto_frontier}, warnings={len(a.warnings)})"
    )


def verdict_lead(
    verdicts: pd.DataFrame | None,
    early_stop: str | None = None,
    gate: tuple[bool, str, list[str]] | None = None,
) -> str:
    """The keywords a one-line display leads with: the early stop, a failed gate, the
    correction and the verdicts counted by word, a passed gate; each ends with ", " ("" for
    an analysis without verdicts). One piece of code for every repr that states verdicts
    (:func:`analysis_repr`, ``ExperimentResult``'s).

    Examples
    --------
    >>> import pandas as pd
    >>> v = pd.DataFrame({"verdict": ["no detectable difference", "worse", "worse"]})
    >>> v.attrs["correction"] = "holm"
    >>> verdict_lead(v)
    "correction='holm', verdicts='2 worse, 1 no detectable difference', "
    >>> said = verdict_lead(v, gate=(False, "Non-inferiority gate failed: c:", []))
    >>> said[: said.index(" correction")]  # a failed gate before the verdicts
    "gate='Non-inferiority gate failed: c',"
    """
    lead = ""
    if verdicts is not None:
        # In a terminal (or print) this line is what is shown: it listed only the pooled
        # frontier, neither the verdicts nor the correction behind them.
        counts = dict(verdicts["verdict"].astype(str).value_counts()) if len(verdicts) else {}
        order = ["better", "worse", "no detectable difference"]  # the findings first
        rank = {word: order.index(word) if word in order else len(order) for word in counts}
        tally = ", ".join(f"{int(counts[w])} {w}" for w in sorted(rank, key=rank.__getitem__))
        lead = f"correction={verdicts.attrs.get('correction')!r}, verdicts={tally or 'none'!r}, "
    if gate is not None:
        # A failed gate blocks shipping (exit 5): said before the verdicts, which read as
        # reassurance when they come first; a passed one after them.
        said = f"gate={gate[1].rstrip(':')!r}, "
        lead = f"{said}{lead}" if not gate[0] else f"{lead}{said}"
    if early_stop is not None:
        lead = f"early_stop={early_stop!r}, {lead}"
    return lead
