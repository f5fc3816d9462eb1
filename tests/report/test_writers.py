"""Outputs started before the analysis (report/writers.start_outputs): the JSON report is
prepared and written by a forked worker beside the outputs written here; the files are
those of the one-process path, and a failure anywhere leaves no file behind and raises
the error a one-process run would (first in the order CSVs, JSON report, the rest).

Each check runs in a fresh interpreter (``isolated``): forking needs a process without
other Python threads.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from ..conftest import EXAMPLE

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux")


def _write(folder: str, fail: tuple[str, ...], started: bool) -> tuple[str | None, dict, list[str]]:
    import threading

    from agenticlens_frames import analyze, load_experiment
    from agenticlens_frames._fork import run_tasks, start_worker
    from agenticlens_frames.report import csv_report, html, json_report, writers

    assert threading.active_count() == 1
    os.environ["SOURCE_DATE_EPOCH"] = "1767225600"
    out = Path(folder)
    here = os.getpid()
    real_json, real_csv = json_report._write_report, csv_report.write_cases_csv
    steps: list[str] = []  # in this process: hand-over, the console's summary, writes

    def json_writer(analysis, path, **options):
        (out.parent / f"{out.name}-json-pid").write_text(str(os.getpid()))
        if "json" in fail:
            raise OSError("json broke")
        return real_json(analysis, path, **options)

    def csv_writer(analysis, path):
        steps.append("csv")
        if "csv" in fail:
            raise OSError("csv broke")
        return real_csv(analysis, path)

    def html_writer(analysis, path):
        if "html" in fail:
            raise OSError("html broke")
        Path(path).write_text("page")

    json_report._write_report = json_writer  # before the fork: the worker has them too
    csv_report.write_cases_csv = csv_writer
    html.write_html_report = html_writer

    run = load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")
    paths = {"save": out / "r.json", "cases_csv": out / "c.csv", "html": out / "r.html"}
    ahead = writers.start_outputs(run, paths, start_worker=start_worker) if started else None
    if ahead is not None:
        send = ahead.worker.send
        ahead.worker.send = lambda message: (send(message), steps.append("sent"))[0]
    analysis = analyze(run)
    error = None
    try:
        writers.write_outputs(
            analysis,
            paths,
            run_tasks=run_tasks,
            workers=1,
            started=ahead,
            meanwhile=lambda: steps.append("summary"),
            lean=False,
        )
    except OSError as exc:
        error = str(exc)
    files = {p.name: p.read_bytes() for p in sorted(out.iterdir())} if out.exists() else {}
    marker = out.parent / f"{out.name}-json-pid"
    by = (
        "nobody" if not marker.exists() else "here" if marker.read_text() == str(here) else "worker"
    )
    return error, {**files, "JSON report written by": by}, steps


@pytest.mark.parametrize(
    ("fail", "error"),
    [
        ((), None),
        (("csv",), "csv broke"),
        (("csv", "json"), "csv broke"),
        (("json",), "json broke"),
        (("html",), "html broke"),
        (("json", "html"), "json broke"),
    ],
)
def test_a_started_json_report_writes_the_same_files_and_fails_the_same_way(
    isolated, tmp_path: Path, fail: tuple[str, ...], error: str | None
) -> None:
    ahead = isolated(_write, str(tmp_path / "ahead"), fail, True)
    inline = isolated(_write, str(tmp_path / "inline"), fail, False)
    assert ahead[0] == inline[0] == error
    assert ahead[1].pop("JSON report written by") == "worker"  # sent before the CSVs
    assert inline[1].pop("JSON report written by") == ("nobody" if "csv" in fail else "here")
    assert ahead[1] == inline[1]  # the same files, byte for byte (none after a failure)
    assert sorted(ahead[1]) == ([] if error else ["c.csv", "r.html", "r.json"])
    # The summary is printed once the worker has the analysis, before anything is written
    # here; without a worker, before the writing.
    assert ahead[2] == ["sent", "summary", "csv"]
    assert inline[2] == ["summary", "csv"]


def test_the_summary_comes_before_the_error_when_no_output_can_be_made(
    isolated, tmp_path: Path
) -> None:
    (tmp_path / "taken").write_text("a file where the output folder should be")
    error, files, steps = isolated(_write, str(tmp_path / "taken" / "folder"), (), True)
    assert "Not a directory" in error and files == {"JSON report written by": "nobody"}
    assert steps == ["summary"]  # the worker was never given the analysis
