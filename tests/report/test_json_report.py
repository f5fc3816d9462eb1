"""The JSON writer: streaming output, lean mode, reproducibility and additions."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import orjson
import pytest

from agenticlens_frames import analyze, load_experiment
from agenticlens_frames.report import json_report
from agenticlens_frames.report.json_report import (
    build_report,
    prepare_json_report,
    write_json_report,
)

from ..conftest import EXAMPLE, example_without_latency


@pytest.fixture(scope="module")
def analysis():
    return analyze(load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml"))


def test_streamed_file_equals_a_whole_document_dump(analysis, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    streamed = write_json_report(analysis, tmp_path / "r.json").read_bytes()
    whole = orjson.dumps(build_report(analysis), option=orjson.OPT_INDENT_2)
    assert streamed == whole


def test_a_prepared_report_does_its_table_work_once_and_writes_the_same_bytes(
    analysis, tmp_path: Path, monkeypatch
) -> None:
    """prepare_json_report builds the case records' fixed pieces and every trial's summary
    slots before the analysis; writing then builds neither again (the pieces are made for
    the depth the writer puts the records at)."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    slots = []
    original_slots = json_report._TrialReports._summary_slots
    monkeypatch.setattr(
        json_report._TrialReports,
        "_summary_slots",
        lambda self, *a: slots.append(a) or original_slots(self, *a),
    )
    made = []
    for name in ("_CaseBytes", "_TrialReports"):
        original = getattr(json_report, name)
        monkeypatch.setattr(
            json_report, name, lambda *a, _o=original, _n=name, **k: made.append(_n) or _o(*a, **k)
        )
    write = prepare_json_report(analysis.run)
    assert made == ["_TrialReports", "_CaseBytes"]
    assert (
        len(slots) == len(set(slots)) == int((analysis.run.trials["status"] == "succeeded").sum())
    )
    data = write(analysis, tmp_path / "prepared.json").read_bytes()
    assert made == ["_TrialReports", "_CaseBytes"] and len(slots) == len(set(slots))
    assert data == write_json_report(analysis, tmp_path / "r.json").read_bytes()
    other = analyze(load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml"))
    with pytest.raises(ValueError, match="another run or setting"):
        write(other, tmp_path / "x.json")


def test_lean_report_keeps_every_statistic(analysis, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    full = json.loads(write_json_report(analysis, tmp_path / "full.json").read_text())
    lean = json.loads(write_json_report(analysis, tmp_path / "lean.json", lean=True).read_text())
    assert lean["agenticlens_frames"]["lean"] is True
    for v_full, v_lean in zip(full["variants"], lean["variants"], strict=True):
        assert v_lean["summary"] == v_full["summary"]
        assert v_lean["cases"] == v_full["cases"]
        for t_full, t_lean in zip(v_full["trials"], v_lean["trials"], strict=True):
            if t_full["report"] is None:
                assert t_lean["report"] is None
                continue
            assert t_lean["report"]["cases"] == []
            assert t_lean["report"]["summary"] == t_full["report"]["summary"]
    for key in ("comparisons", "pareto_frontier_variant_ids", "factor_levels", "warnings"):
        assert lean[key] == full[key]


def test_report_records_what_ran(analysis) -> None:
    report = build_report(analysis)
    variant = report["variants"][0]
    spec = analysis.run.manifest.variants[0]
    assert (variant["target"], variant["timeout_seconds"]) == (spec.target, spec.timeout_seconds)
    assert report["agenticlens_frames"]["experiment_id"] == "support-agent-upgrade@1"
    # the trial summaries are consistent with the variant summary built from them
    summary = variant["summary"]["pass_rate"]
    rates = [t["report"]["summary"]["pass_rate"] for t in variant["trials"] if t["report"]]
    assert summary["count"] == len(rates)
    assert summary["mean"] == pytest.approx(sum(rates) / len(rates), rel=1e-15)


def test_report_says_which_keys_are_verdicts_and_which_pool_attempts(analysis) -> None:
    """Every pooled field the package writes is named as such in read_first, and every key
    read_first points to as the answer is in the report."""
    report = build_report(analysis)
    read_first = report["agenticlens_frames"]["read_first"]
    assert {"verdicts", "case_level"} <= set(report) & set(read_first)
    pooled = read_first["compatible"]
    assert set(report["comparisons"][1]) >= {"case_pass_rate_p_value", "statistically_significant"}
    for field in ("case_pass_rate_p_value", "statistically_significant", "case_pass_rate_interval"):
        assert field in pooled
    assert "not verdicts" in pooled and "independent" in pooled


def _path_exists(report: dict, path: str) -> bool:
    """Whether ``report`` holds the dotted ``path`` read_first names (``[]``: in every
    item of that list)."""
    holders = [report]
    for part in path.split("."):
        key, each = part.removesuffix("[]"), part.endswith("[]")
        holders = [h[key] for h in holders if isinstance(h, dict) and key in h]
        if each:
            holders = [item for h in holders for item in h]
    return bool(holders)


def test_read_first_says_a_labelled_latency_delta_is_the_package_s_and_where_ours_is(
    analysis, tmp_path: Path
) -> None:
    """Fix B3: where a side has no known latency, a comparison's latency delta holds the
    package's, labelled ``basis: "agenticlens"``. read_first lists it with the package's
    fields, says it is not ours, and names where ours is, each place in the report; a
    report without such a block says nothing of it (its read_first is as before)."""
    folder = example_without_latency(tmp_path, "prompt-v2")
    labelled = build_report(
        analyze(load_experiment(folder / "manifest.yaml", folder / "suite.yaml")), lean=True
    )
    blocks = [c["average_latency_ms_delta"] for c in labelled["comparisons"]]
    assert [b.get("basis") for b in blocks].count("agenticlens") == 1
    said = labelled["agenticlens_frames"]["read_first"]["compatible"]
    plain = build_report(analysis, lean=True)["agenticlens_frames"]["read_first"]["compatible"]
    assert said.startswith(plain) and "average_latency_ms_delta" not in plain
    added = said.removeprefix(plain)
    assert "comparisons[].average_latency_ms_delta" in added and "'agenticlens'" in added
    assert "the package's delta" in added and "not ours" in added
    for path in ("verdicts.omitted", "variants[].summary.average_latency_ms"):
        assert path in added and _path_exists(labelled, path), path
    # What it points to: the reason ours is unknown, and no known latency for prompt-v2.
    omitted = labelled["verdicts"]["omitted"]
    assert any(
        o["candidate_variant_id"] == "prompt-v2" and o["dimension"] == "latency" for o in omitted
    )
    means = {v["variant_id"]: v["summary"]["average_latency_ms"] for v in labelled["variants"]}
    assert means["prompt-v2"] is None and means["baseline"]["mean"] > 0


def _one_trial_without_latency(folder: Path) -> Path:
    """A copy of the bundled example whose prompt-v2 recorded no latency in its second
    trial only (AgenticLens reads each as 0 ms)."""
    import shutil

    target = folder / "one-trial"
    shutil.copytree(EXAMPLE, target)
    path = target / "trials" / "prompt-v2.json"
    data = json.loads(path.read_text())
    for sample in data["trials"][1]["samples"]:
        sample["trace"].pop("total_latency_ms", None)
    path.write_text(json.dumps(data))
    return target


def test_read_first_says_a_trials_written_latency_is_the_package_s_and_where_ours_is(
    analysis, tmp_path: Path
) -> None:
    """Fix B3: a trial with no known latency holds the package's mean, 0.0, in its
    report.summary.average_latency_ms, and nothing said so: read_first lists it with the
    package's fields, not ours, and names where ours is; under the package's policy
    (``zero``), where the 0.0 is the run's own, and in a report without such a trial it
    says nothing of it (read_first as before)."""
    folder = _one_trial_without_latency(tmp_path)
    run = load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    report = build_report(analyze(run), lean=True)
    said = report["agenticlens_frames"]["read_first"]["compatible"]
    plain = build_report(analysis, lean=True)["agenticlens_frames"]["read_first"]["compatible"]
    assert said.startswith(plain) and "trials[]" not in plain
    added = said.removeprefix(plain)
    # Only this: no comparison's delta is the package's (prompt-v2 has known latencies).
    assert "average_latency_ms_delta" not in said
    assert "variants[].trials[].report.summary.average_latency_ms" in added
    assert "no known latency" in added and "0.0" in added and "not ours" in added
    for path in (
        "variants[].trials[].report.summary.average_latency_ms",
        "variants[].summary.average_latency_ms",
    ):
        assert path in added and _path_exists(report, path), path
    # What it points to, from the recorded traces: trial 2 wrote 0.0, and ours is the mean
    # of the other four trials' means of their known latencies.
    recorded = json.loads((folder / "trials" / "prompt-v2.json").read_text())["trials"]
    known = [
        [s["trace"]["total_latency_ms"] for s in t["samples"] if s["trace"].get("total_latency_ms")]
        for t in recorded
    ]
    assert known[1] == [] and all(known[i] for i in (0, 2, 3, 4))
    variant = next(v for v in report["variants"] if v["variant_id"] == "prompt-v2")
    trials = [t["report"]["summary"]["average_latency_ms"] for t in variant["trials"]]
    assert trials[1] == 0.0
    ours = variant["summary"]["average_latency_ms"]
    expected = [sum(k) / len(k) for i, k in enumerate(known) if i != 1]
    assert ours["count"] == 4 and ours["mean"] == pytest.approx(sum(expected) / 4, rel=1e-12)
    zero = build_report(analyze(run, latency_missing="zero"), lean=True)
    assert zero["agenticlens_frames"]["read_first"]["compatible"] == plain


def test_read_first_of_a_watched_run_leads_with_the_rules_statement(analysis) -> None:
    """After a run an early-stopping rule watched, every surface leads with the rule's
    statement and titles the fixed-sample verdicts descriptive; the JSON's read_first
    still named the verdicts "the answer"."""
    import dataclasses

    for stopped in (True, False):
        watched = dataclasses.replace(
            analysis, extras={"early_stopping": {"stopped_early": stopped}}
        )
        read_first = build_report(watched)["agenticlens_frames"]["read_first"]
        assert next(iter(read_first)) == "early_stopping"
        assert read_first["early_stopping"].startswith("the answer")
        assert read_first["verdicts"].startswith("descriptive")
        assert "the answer:" not in read_first["verdicts"]
        assert (
            read_first["compatible"]
            == build_report(analysis)["agenticlens_frames"]["read_first"]["compatible"]
        )


def test_a_failed_write_keeps_the_previous_report(analysis, tmp_path: Path, monkeypatch) -> None:
    """Disk full half way: the error reaches the caller (it happened in the writer
    thread), no temporary file is left, and the report already there is untouched."""
    import errno

    from agenticlens_frames.report import json_report

    target = tmp_path / "r.json"
    write_json_report(analysis, target, lean=True)
    before = target.read_bytes()
    written = []

    class FullDisk:
        def __init__(self, out):
            self.out = out

        def write(self, chunk):
            if written:
                raise OSError(errno.ENOSPC, "No space left on device")
            written.append(len(chunk))
            return self.out.write(chunk)

    original = json_report._BackgroundWriter.__init__
    monkeypatch.setattr(
        json_report._BackgroundWriter,
        "__init__",
        lambda self, out: original(self, FullDisk(out)),
    )
    with pytest.raises(OSError, match="No space left"):
        write_json_report(analysis, target)
    assert written  # the first chunk went through, the second failed
    assert target.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def _ahead_write(analysis, path: Path, monkeypatch, keep_going, budget: int):
    """Write the report with case records built ahead; return (bytes, trials held ahead,
    bytes held, trials whose records were built at writing time, what is left ahead)."""
    trials = json_report._TrialReports(analysis.run, lean=False)
    trials.prepare()
    held = trials.build_ahead(keep_going, budget)
    ahead = list(trials._ahead)
    assert held == sum(len(c) for chunks in trials._ahead.values() for c in chunks)
    built: list[tuple[int, int]] = []
    original = json_report._CaseBytes.trial
    r = trials.att_start
    starts = {v: k for k, v in r.items()}
    monkeypatch.setattr(
        json_report._CaseBytes,
        "trial",
        lambda self, s, e: built.append(starts[(s, e)]) or original(self, s, e),
    )
    data = json_report._write_report(analysis, path, lean=False, trials=trials).read_bytes()
    monkeypatch.setattr(json_report._CaseBytes, "trial", original)
    return data, ahead, held, built, trials._ahead


def test_case_records_built_ahead_are_written_once_with_the_same_bytes(
    analysis, tmp_path: Path, monkeypatch
) -> None:
    """build_ahead (a worker waiting for its analysis) builds the first trials' case
    records within its budget and until told to stop; the writer hands those out and
    builds only the others; the file is the same."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    expected = write_json_report(analysis, tmp_path / "r.json").read_bytes()
    probe = json_report._TrialReports(analysis.run, lean=False)
    order = probe._reported()
    # The trials with a report (one of the example's failed), in the report's order.
    succeeded = analysis.run.trials["status"] == "succeeded"
    assert order == sorted(order) and len(order) == int(succeeded.sum()) > 12
    sizes = [sum(map(len, probe.cases_json(*key, json_report._CASES_DEPTH))) for key in order]

    # Everything fits: every trial is held, and none is built again.
    data, ahead, held, built, left = _ahead_write(
        analysis, tmp_path / "a.json", monkeypatch, lambda: True, sum(sizes)
    )
    assert (data, ahead, held, built, left) == (expected, order, sum(sizes), [], {})

    # The first trial says the whole would not fit: a quarter of the budget is held.
    budget = 4 * (sizes[0] + sizes[1])
    data, ahead, held, built, left = _ahead_write(
        analysis, tmp_path / "b.json", monkeypatch, lambda: True, budget
    )
    assert (data, ahead, held, built) == (expected, order[:2], sizes[0] + sizes[1], order[2:])

    # Told to stop at its third check (each trial here is one chunk): the third trial
    # is dropped, the first two are held.
    calls = []
    data, ahead, held, built, left = _ahead_write(
        analysis,
        tmp_path / "c.json",
        monkeypatch,
        lambda: calls.append(1) is None and len(calls) < 3,
        sum(sizes),
    )
    assert (data, ahead, built, len(calls)) == (expected, order[:2], order[2:], 3)

    # Nothing ahead in a lean report, nor in a process that is no waiting worker.
    lean = json_report._TrialReports(analysis.run, lean=True)
    assert lean.build_ahead(lambda: True) == 0 and lean._ahead == {}
    write = prepare_json_report(analysis.run)
    assert write(analysis, tmp_path / "d.json").read_bytes() == expected


def test_the_report_is_handed_to_the_disk_as_it_is_written(
    analysis, tmp_path: Path, monkeypatch
) -> None:
    """Every _WRITEBACK_BYTES the writer asks the kernel to start writing what it wrote
    since the last request: consecutive ranges of the file from its start; the bytes are
    those of a whole-document dump."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    ranges: list[tuple[int, int]] = []
    monkeypatch.setattr(json_report, "_WRITEBACK_BYTES", 100_000)
    monkeypatch.setattr(json_report, "start_writeback", lambda fd, o, n: ranges.append((o, n)))
    data = write_json_report(analysis, tmp_path / "r.json").read_bytes()
    assert data == orjson.dumps(build_report(analysis), option=orjson.OPT_INDENT_2)
    assert len(ranges) >= len(data) // 200_000
    assert ranges[0][0] == 0 and all(n >= 100_000 for _, n in ranges)
    assert all(o + n == after for (o, n), (after, _) in pairwise(ranges))
    assert sum(n for _, n in ranges) <= len(data)


def test_a_folder_given_as_the_report_path_is_refused_naming_it(analysis, tmp_path: Path) -> None:
    """write_json_report(result, "out/") failed with an IsADirectoryError naming a temporary
    file beside the folder; the HTML page's writer shares the path."""
    from agenticlens_frames import InputError, write_html_report

    for write in (write_json_report, write_html_report):
        with pytest.raises(InputError, match="is a folder, not a file") as info:
            write(analysis, tmp_path)
        assert str(tmp_path) in str(info.value)
    assert list(tmp_path.iterdir()) == []  # nothing left behind
    assert list(tmp_path.parent.glob(f".{tmp_path.name}.*")) == []


def test_a_path_starting_with_a_tilde_is_refused_not_made_a_folder_named_tilde(
    analysis, tmp_path: Path, monkeypatch
) -> None:
    """write_json_report(result, "~/r/report.json") made ./~/r/report.json: Python does not
    expand "~"."""
    from agenticlens_frames import InputError

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    with pytest.raises(InputError, match=r"'~' is not expanded here \(pass .*expanduser\(\)\)"):
        write_json_report(analysis, "~/r/report.json")
    with pytest.raises(InputError, match="'~' is not expanded here"):
        analysis.run.to_parquet("~/r/tables")
    assert list(tmp_path.iterdir()) == []
