"""Outputs (issue 15): every output is written whole or not at all, never through a
planted link, never onto an input, another output or the run folder; a failed output ends
the run with exit 1 and every earlier file intact."""

from __future__ import annotations

import errno
import itertools
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from agenticlens_frames import _files

from ._round2 import ROOT, assert_process, assert_refused, cli, cli_process, snapshot, stage

FILE_OPTIONS = ["--save", "--html", "--csv", "--cases-csv", "--summary"]
ALIASES = ["same", "dot", "symlink", "hardlink"]


def _alias(folder: Path, target: Path, how: str) -> Path:
    """Another name for ``target``: as written, through ./.., a symbolic or a hard link."""
    if how == "same":
        return target
    if how == "dot":
        return folder / "sub" / ".." / target.relative_to(folder)
    link = folder / f"alias-{how}-{target.name}"
    if how == "symlink":
        link.symlink_to(target)
    else:
        os.link(target, link)
    return link


def _run_args(manifest: Path, suite: Path) -> list[str | Path]:
    return ["experiment", "run", manifest, suite, "-q"]


@pytest.mark.parametrize(("first", "second"), list(itertools.combinations(FILE_OPTIONS, 2)))
@pytest.mark.parametrize("how", ALIASES)
def test_two_outputs_naming_one_file_are_refused(tmp_path, first, second, how):
    manifest, suite = stage(tmp_path)
    (tmp_path / "sub").mkdir()
    out = tmp_path / "out.file"
    out.write_text("previous good content")
    other = _alias(tmp_path, out, how)
    before = snapshot(tmp_path)
    args = [*_run_args(manifest, suite), first, out, second, other]
    if "--save" not in (first, second):
        args += ["--save", tmp_path / "report.json"]
    result = cli(*args)
    assert_refused(result, "name the same file", first, second)
    assert snapshot(tmp_path) == before  # nothing written, nothing destroyed


@pytest.mark.parametrize("option", FILE_OPTIONS)
@pytest.mark.parametrize("victim", ["manifest", "suite", "recorded"])
@pytest.mark.parametrize("how", ALIASES)
def test_an_output_naming_an_input_is_refused(tmp_path, option, victim, how):
    manifest, suite = stage(tmp_path)
    (tmp_path / "sub").mkdir()
    target = {"manifest": manifest, "suite": suite, "recorded": tmp_path / "trials/cand.json"}
    name = _alias(tmp_path, target[victim], how)
    before = snapshot(tmp_path)
    args = [*_run_args(manifest, suite), option, name]
    if option != "--save":
        args += ["--save", tmp_path / "out" / "report.json"]
    result = cli(*args)
    assert_refused(result, "would overwrite an input", option)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("option", ["--html", "--csv", "--cases-csv", "--summary"])
@pytest.mark.parametrize("how", ALIASES)
def test_report_outputs_never_overwrite_the_saved_report(tmp_path, option, how):
    manifest, suite = stage(tmp_path)
    (tmp_path / "sub").mkdir()
    saved = tmp_path / "r.json"
    assert cli(*_run_args(manifest, suite), "--save", saved).exit_code == 0
    name = _alias(tmp_path, saved, how)
    before = snapshot(tmp_path)
    result = cli("experiment", "report", name, option, saved)
    assert_refused(result, "would overwrite an input", option, "r.json")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("option", FILE_OPTIONS)
def test_a_file_output_naming_a_directory_is_refused(tmp_path, option):
    manifest, suite = stage(tmp_path)
    (tmp_path / "adir").mkdir()
    result = cli(*_run_args(manifest, suite), option, tmp_path / "adir")
    assert_refused(result, "names a directory", option, "adir")


@pytest.mark.parametrize("where", ["file", "inside-journal", "tables"])
def test_parquet_and_run_folder_clashes_are_refused(tmp_path, where):
    manifest, suite = stage(tmp_path)
    run_dir = tmp_path / "run"
    (run_dir / "journal").mkdir(parents=True)
    (tmp_path / "plain").write_text("x")
    args = [*_run_args(manifest, suite), "--run-dir", run_dir]
    if where == "file":
        result = cli(*args, "--parquet", tmp_path / "plain")
        assert_refused(result, "--parquet names an existing file", "plain")
    elif where == "inside-journal":
        result = cli(*args, "--save", run_dir / "journal" / "000001.jsonl")
        assert_refused(result, "inside the run folder", "--save")
    else:
        result = cli(*args, "--parquet", run_dir)
        assert_refused(result, "--parquet", "run")


def test_run_dir_that_is_a_file_is_refused(tmp_path):
    manifest, suite = stage(tmp_path)
    (tmp_path / "plain").write_text("keep me")
    result = cli(*_run_args(manifest, suite), "--run-dir", tmp_path / "plain")
    assert_refused(result, "--run-dir names an existing file", "plain")
    assert (tmp_path / "plain").read_text() == "keep me"


@pytest.mark.parametrize("option", FILE_OPTIONS)
def test_a_planted_symlink_at_the_old_temporary_name_is_not_followed(tmp_path, option):
    manifest, suite = stage(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("must survive")
    out = tmp_path / "out.file"
    # The names earlier versions used, and a few a guesser would try.
    for name in (f".{out.name}.tmp", f"{out.name}.tmp", f".{out.name}.part"):
        (tmp_path / name).symlink_to(victim)
    args = [*_run_args(manifest, suite), option, out]
    if option != "--save":
        args += ["--save", tmp_path / "report.json"]
    result = cli(*args)
    assert result.exit_code == 0, result.output
    assert victim.read_text() == "must survive"
    assert out.stat().st_size > 0 and not out.is_symlink()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp") and not p.is_symlink()]


@pytest.mark.parametrize("failing", FILE_OPTIONS)
def test_a_failing_output_leaves_every_earlier_file_as_it_was(tmp_path, failing):
    manifest, suite = stage(tmp_path)
    paths = {opt: tmp_path / f"out{n}.file" for n, opt in enumerate(FILE_OPTIONS)}
    for path in paths.values():
        path.write_text("previous good content")
    (tmp_path / "blocker").write_text("a file where a folder is needed")
    paths[failing] = tmp_path / "blocker" / "x.out"
    before = snapshot(tmp_path)
    args = [*_run_args(manifest, suite)]
    for opt, path in paths.items():
        args += [opt, path]
    result = cli(*args)
    # Refused before the run (stat says ENOTDIR); a failure while writing is
    # test_a_full_disk_at_any_output_publishes_nothing's.
    assert_refused(result, f"{failing} cannot be written there (Not a directory)", "blocker")
    assert snapshot(tmp_path) == before  # the others were not published either


@pytest.mark.parametrize("nth", range(4))
def test_a_full_disk_at_any_output_publishes_nothing(tmp_path, monkeypatch, nth):
    manifest, suite = stage(tmp_path)
    paths = {opt: tmp_path / f"out{n}.file" for n, opt in enumerate(FILE_OPTIONS)}
    for path in paths.values():
        path.write_text("previous good content")
    before = snapshot(tmp_path)
    calls = {"n": 0}
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a folder's entry: not an output
            return real_fsync(fd)
        calls["n"] += 1
        if calls["n"] == nth + 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(_files.os, "fsync", fsync)
    monkeypatch.setenv("AGENTICLENS_FRAMES_WORKERS", "1")
    args = [*_run_args(manifest, suite)]
    for opt, path in paths.items():
        args += [opt, path]
    result = cli(*args)
    assert_refused(result, "No space left on device")
    assert snapshot(tmp_path) == before
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_three_processes_saving_one_report_leave_a_valid_one(tmp_path):
    manifest, suite = stage(tmp_path)
    out = tmp_path / "r.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "agenticlens_frames.cli", "experiment", "run"]
    running = [
        subprocess.Popen(
            [*cmd, str(manifest), str(suite), "-q", "--save", str(out)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    for proc in running:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0 and "Traceback" not in err, err
    assert json.loads(out.read_text())["schema_version"] == "1.1"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".r.json")] == []


@pytest.mark.parametrize("options", [["--save"], ["--save", "--csv", "--html", "--cases-csv"]])
def test_outputs_to_dev_null_leave_the_device_alone(tmp_path, options):
    manifest, suite = stage(tmp_path)
    before = os.stat("/dev/null")
    args = [*_run_args(manifest, suite)]
    for option in options:
        args += [option, "/dev/null"]
    result = cli(*args)
    assert result.exit_code == 0, result.output
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino
    assert not [p for p in Path("/dev").glob(".null.*")]


@pytest.mark.parametrize("what", ["save_link_loop", "save_dangling_link", "run_dir_link_loop"])
def test_odd_output_paths(tmp_path, what):
    manifest, suite = stage(tmp_path)
    loop = tmp_path / "loop"
    if what == "save_dangling_link":
        loop.symlink_to(tmp_path / "nowhere" / "r.json")
    else:
        loop.symlink_to(loop)
    option = "--run-dir" if what.startswith("run_dir") else "--save"
    result = cli(*_run_args(manifest, suite), option, loop)
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.exit_code in (0, 1), result.output
    if result.exit_code == 1:
        assert "loop" in result.output


@pytest.mark.parametrize("supervise", ["1", "0"])
@pytest.mark.parametrize("lost", ["stdout", "stdout+stderr", "full disk"])
def test_a_console_that_cannot_be_written_costs_no_output(tmp_path, supervise, lost):
    """``experiment run … | head -3`` (the reader leaves) or stdout on a full disk: the
    console goes quiet, the files are still written (the same bytes as with a console) and
    the exit code is the run's own, not click's 1 or a traceback."""
    if lost == "full disk" and not Path("/dev/full").exists():
        pytest.skip("needs /dev/full (a device whose writes fail with ENOSPC; Linux has it)")
    manifest, suite = stage(tmp_path)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SOURCE_DATE_EPOCH": "1767225600",
        "AGENTICLENS_FRAMES_SUPERVISE": supervise,
    }
    cmd = [sys.executable, "-m", "agenticlens_frames.cli", "experiment", "run"]
    cmd += [str(manifest), str(suite)]

    def run(out: Path, **streams) -> subprocess.CompletedProcess[bytes]:
        out.mkdir()
        files = ["--save", out / "r.json", "--csv", out / "v.csv", "--cases-csv", out / "c.csv"]
        files += ["--html", out / "r.html"]
        return subprocess.run([*cmd, *map(str, files)], env=env, timeout=120, **streams)

    if lost == "full disk":
        with open("/dev/full", "wb") as full:
            done = run(tmp_path / "lost", stdout=full, stderr=subprocess.PIPE)
        said = done.stderr.decode()
        assert "Console output on stdout is lost (No space left on device)" in said, said
        assert "Traceback" not in said, said
    else:
        read, write = os.pipe()
        os.close(read)  # the reader is gone before the first line
        try:
            err = write if lost == "stdout+stderr" else subprocess.PIPE
            done = run(tmp_path / "lost", stdout=write, stderr=err)
        finally:
            os.close(write)
        assert not done.stderr, done.stderr  # a reader leaving is not an error
    expected = run(tmp_path / "read", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert done.returncode == expected.returncode == 0
    assert snapshot(tmp_path / "lost") == snapshot(tmp_path / "read")
    assert sorted(snapshot(tmp_path / "read")) == ["c.csv", "r.html", "r.json", "v.csv"]


@pytest.mark.parametrize("option", ["--run-dir", "--save", "--parquet", "--comparisons-lock"])
def test_a_name_too_long_is_refused_in_one_line(tmp_path, option):
    """A name past the file system's 255 bytes makes ``Path.exists()`` raise (Python
    3.11). It was a traceback, and under the supervisor "the run's process exited with
    status 1 … (os._exit …)", exit 7; now one line naming the path and the fix."""
    manifest, suite = stage(tmp_path)
    long_name = tmp_path / ("n" * 300)
    done = cli_process(*_run_args(manifest, suite), option, long_name, cwd=tmp_path)
    text = assert_process(done, 1, "File name too long", "use a shorter file or folder name")
    assert str(long_name) in text
    assert "ended before writing" not in text


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
@pytest.mark.parametrize("option", ["--save", "--cases-csv"])
def test_a_failed_write_names_the_output(tmp_path, option):
    """A full disk fails a write, not the open, and the OSError names no file: the message
    named none either ("Unable to write the outputs: No space left on device")."""
    manifest, suite = stage(tmp_path)
    result = cli(*_run_args(manifest, suite), "--save", tmp_path / "r.json", option, "/dev/full")
    assert_refused(result, "Unable to write the outputs: /dev/full: No space left on device")


@pytest.mark.parametrize(
    ("raised", "bug", "said"),
    [
        (RuntimeError("an invariant broke"), True, "RuntimeError: an invariant broke"),
        (OSError(errno.EBADF, "Bad file descriptor"), True, "OSError: [Errno 9]"),
        (OSError(errno.ENOSPC, "No space left on device"), False, "No space left on device"),
        (OSError(errno.EACCES, "Permission denied", "/srv/x"), False, "/srv/x: Permission"),
    ],
)
def test_an_unexpected_exception_is_said_to_be_a_bug_and_marks_the_run_done(
    tmp_path, monkeypatch, capsys, raised, bug, said
):
    """A bug escaping a command: its traceback, a line saying it is one, exit 1; the
    system refusing something the user can fix (a full disk, a permission): one line,
    exit 1. Either way the supervised child records that it ended deliberately, so its
    watcher does not report a target that ended the process (exit 7)."""
    from agenticlens_frames import _supervise
    from agenticlens_frames import cli as cli_module

    def broken() -> None:
        raise raised

    done_file = tmp_path / "done"
    monkeypatch.setenv(_supervise.DONE_ENV, str(done_file))
    monkeypatch.setattr(cli_module, "app", broken)
    with pytest.raises(SystemExit) as ended:
        cli_module._command()
    assert ended.value.code == 1
    err = capsys.readouterr().err
    assert said in err
    assert ("Traceback" in err) == bug
    assert ("this is a bug; please report it" in err) == bug
    assert done_file.read_text() == "1"
