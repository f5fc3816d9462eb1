"""Fixtures for the live-runner tests: target modules, manifests, and a local HTTP agent.

Everything runs on 127.0.0.1. The HTTP agent is a separate process
(tests/fixtures/live/server.py), so its sockets and threads are not counted as ours and
it can die abruptly like a real server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

LIVE = Path(__file__).resolve().parents[1] / "fixtures" / "live"
TARGETS = LIVE / "targets.py"
SUITE = LIVE / "suite.yaml"
SERVER = LIVE / "server.py"


class AgentServer:
    """The local HTTP agent process."""

    def __init__(self, port: int = 0, die_after: int | None = None) -> None:
        args = [sys.executable, str(SERVER), "--port", str(port)]
        if die_after is not None:
            args += ["--die-after", str(die_after)]
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("PORT "):
            self.stop()
            raise RuntimeError(f"test server did not start: {line!r}")
        self.port = int(line.split()[1])

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.url("/stats"), timeout=5) as response:
            return json.loads(response.read())

    def requests(self, path: str | None = None) -> list[tuple[str, str]]:
        return [(r[0], r[1]) for r in self.stats()["requests"] if path is None or r[0] == path]

    def wait_dead(self) -> None:
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()


@pytest.fixture
def agent_server() -> Iterator[AgentServer]:
    server = AgentServer()
    yield server
    server.stop()


@pytest.fixture
def start_server() -> Iterator[Callable[..., AgentServer]]:
    """Start servers with options (``port``, ``die_after``); all are stopped afterwards."""
    started: list[AgentServer] = []

    def start(**options: Any) -> AgentServer:
        server = AgentServer(**options)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def variant(
    variant_id: str,
    target: str,
    kind: str = "python",
    **extra: Any,
) -> dict[str, Any]:
    """A manifest variant; python targets name a function of tests/fixtures/live/targets.py."""
    if kind == "python" and ":" not in target:
        target = f"{TARGETS}:{target}"
    return {"id": variant_id, "name": variant_id, "target_kind": kind, "target": target, **extra}


@pytest.fixture
def write_experiment(tmp_path: Path) -> Callable[..., tuple[Path, Path]]:
    """Write a manifest (and optionally a suite) into tmp_path; returns both paths."""

    def write(
        variants: list[dict[str, Any]],
        *,
        cases: list[dict[str, Any]] | None = None,
        name: str = "manifest.yaml",
        **top: Any,
    ) -> tuple[Path, Path]:
        while len(variants) < 3:  # AgenticLens requires three variants
            variants = [*variants, variant(f"filler{len(variants)}", "answer")]
        manifest = {
            "name": top.pop("experiment_name", "live-test"),
            "version": "1",
            "baseline_variant_id": variants[0]["id"],
            "trial_count": top.pop("trial_count", 2),
            "variants": variants,
            **top,
        }
        path = tmp_path / name
        path.write_text(yaml.safe_dump(manifest, sort_keys=False), encoding="utf-8")
        suite = SUITE
        if cases is not None:
            suite = tmp_path / f"suite-{path.stem}.yaml"
            suite.write_text(
                yaml.safe_dump({"name": "s", "version": "1", "cases": cases}, sort_keys=False),
                encoding="utf-8",
            )
        return path, suite

    return write


def simple_cases(inputs: list[str]) -> list[dict[str, Any]]:
    """Cases c1..cN with the given inputs and one check each."""
    return [
        {"id": f"c{i}", "name": f"case {i}", "input": text, "expected_contains": ["parcel"]}
        for i, text in enumerate(inputs, start=1)
    ]


def open_sockets() -> int | None:
    """Sockets open in this process (Linux), or None where /proc is not available."""
    fd_dir = Path("/proc/self/fd")
    if not fd_dir.exists():
        return None
    count = 0
    for fd in fd_dir.iterdir():
        try:
            if os.readlink(fd).startswith("socket:"):
                count += 1
        except OSError:
            continue
    return count


def journal_line(record: dict[str, Any]) -> str:
    """A journal line for ``record`` as the journal's format says (docs/live-runs.md), made
    here without the package: compact JSON, and as its last field ``crc`` the CRC-32 of the
    line's bytes before that field."""
    head = json.dumps(record, ensure_ascii=False, separators=(",", ":"))[:-1]
    return f'{head},"crc":"{zlib.crc32(head.encode("utf-8")):08x}"}}\n'
