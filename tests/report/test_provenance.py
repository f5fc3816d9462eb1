"""The inputs' digests hashed ahead on a thread are those of the files as provenance
reads them."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from agenticlens_frames.report.provenance import DigestsAhead, provenance


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_digests_ahead_are_those_of_the_files(tmp_path: Path) -> None:
    big = os.urandom((8 << 20) + 12345)  # more than one of the thread's reads
    files = {"big": (tmp_path / "big.json", big), "small": (tmp_path / "s.yaml", b"a: 1\n")}
    for path, data in files.values():
        path.write_bytes(data)
    ahead = DigestsAhead(path for path, _ in files.values())
    generated = provenance({name: path for name, (path, _) in files.items()}, ahead)
    assert [i["sha256"] for i in generated["inputs"]] == [_digest(d) for _, d in files.values()]


def test_a_file_changed_after_it_was_hashed_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "trials.json"
    path.write_bytes(b"[1, 2, 3]")
    ahead = DigestsAhead([path])
    ahead._thread.join()  # hashed: now the file changes, same size
    before = path.stat().st_mtime_ns
    path.write_bytes(b"[1, 2, 4]")
    # (the kernel's file times move by clock ticks of a few ms: a rewrite of the same size
    # within one tick is the case this cannot see; this one is a second later)
    os.utime(path, ns=(before, before + 1_000_000_000))
    assert ahead.sha256(path) == _digest(b"[1, 2, 4]")
    replacement = tmp_path / "other.json"
    replacement.write_bytes(b"[9]")
    replacement.replace(path)  # a new file under the same name
    assert ahead.sha256(path) == _digest(b"[9]")


def test_an_unreadable_input_fails_where_provenance_reads_it(tmp_path: Path) -> None:
    missing = tmp_path / "gone.json"
    ahead = DigestsAhead([missing])
    with pytest.raises(FileNotFoundError):
        provenance({"recorded trials of a": missing}, ahead)
