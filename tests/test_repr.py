"""The notebook display of an analysis states AgenticLens's pass-rate change in percentage
points, as the tables and the page do (it wrote "+30.0%", which reads as relative)."""

from __future__ import annotations

import re

import pandas as pd

from agenticlens_frames import ExperimentRun, analyze


def test_the_compatible_pass_rate_change_is_in_points() -> None:
    rows = pd.DataFrame(
        [
            {"variant_id": v, "trial": t, "case_id": f"c{c}", "passed": c < limit}
            for v, limit in (("base", 5), ("cand", 8), ("other", 3))
            for t in (1, 2)
            for c in range(10)
        ]
    )
    run = ExperimentRun.from_frames(
        rows,
        pd.DataFrame({"variant_id": ["base", "cand", "other"]}),
        pd.DataFrame({"case_id": [f"c{c}" for c in range(10)]}),
    )
    shown = analyze(run, frontier_n_resamples=0)._repr_html_()
    rate = rows.groupby("variant_id")["passed"].mean()
    (row,) = re.findall(r"<tr><td>cand</td><td>([^<]*?)</td><td>[0-9.]+</td>", shown)
    assert row == f"{100 * (rate['cand'] - rate['base']):+.1f} pp"
