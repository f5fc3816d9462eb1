"""With clusters of cases declared, the page's verdict note names the clusters as the unit
(it said "cases are the unit" above a cluster-robust interval and test)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import yaml
from scipy import stats

from agenticlens_frames import analyze, load_experiment
from agenticlens_frames.report.html import render_html
from agenticlens_frames.testing import make_synthetic

TOPICS = 4


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory):
    folder = make_synthetic(tmp_path_factory.mktemp("clusters"), variants=3, trials=3, cases=24)
    suite = yaml.safe_load((folder / "suite.yaml").read_text(encoding="utf-8"))
    for i, case in enumerate(suite["cases"]):
        case.setdefault("metadata", {})["topic"] = f"t{i % TOPICS}"
    (folder / "suite.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    manifest = yaml.safe_load((folder / "manifest.yaml").read_text(encoding="utf-8"))
    manifest["comparisons"] = {"correction": "holm", "cluster": "topic"}
    (folder / "manifest.yaml").write_text(yaml.safe_dump(manifest), encoding="utf-8")
    return load_experiment(folder / "manifest.yaml", folder / "suite.yaml")


def _cr1_interval(run, candidate: str) -> tuple[float, float]:
    """The CR1 interval of the per-case pass-rate difference, clusters = topics, t(G - 1),
    in percentage points, from the attempts."""
    att = run.attempts[run.attempts["status"] != "trial_failed"]
    rate = att.groupby(["variant_id", "case_id"])["passed"].mean().unstack(0)
    diff = (rate[candidate] - rate["v00"]).astype(float)
    topic = run.cases.set_index("case_id").loc[diff.index, "case_index"] % TOPICS
    n, mean = len(diff), diff.mean()
    sums = (diff - mean).groupby(topic.to_numpy()).sum()
    se = np.sqrt(TOPICS / (TOPICS - 1) * (sums**2).sum() / n**2)
    half = stats.t.ppf(0.975, TOPICS - 1) * se
    return round((mean - half) * 100, 1), round((mean + half) * 100, 1)


def test_the_verdict_note_names_clusters_as_the_unit(run) -> None:
    page = render_html(analyze(run, frontier_n_resamples=0))
    start = page.index("<section id='verdicts'>")
    section = page[start : page.index("</section>", start)]
    assert "clusters of cases are the unit" in section
    assert "cases are the unit" not in section.replace("clusters of cases are the unit", "")
    assert f"CR1 t (G={TOPICS} clusters)" in section
    (row,) = re.findall(
        r"<tr data-variant='v01'><td[^>]*><strong>v01</strong></td>"
        r"<td[^>]*>quality<br>.*?</tr>",
        section,
    )
    low, high = _cr1_interval(run, "v01")
    assert f"[{low:+.1f}, {high:+.1f}]" in row
