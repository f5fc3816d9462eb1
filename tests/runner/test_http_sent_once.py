"""A POST is sent once: never again behind the run's back (runner/http_client.py).

A request is written again automatically only when the server cannot have it: a pooled
keep-alive connection the server closed while it sat idle is dropped before anything is
written to it, and a request the socket refused at once goes on a new connection. Once a
request was written, a connection that ends without a reply fails the call
(``connection``), and when it was a reused one the variant's pool keeps no connection from
then on; only the variant's retry policy calls again, and every call is a row of
``result.calls``. So the server never receives a request more often than it is recorded.

The agent here is a small keep-alive HTTP/1.1 server in threads (blocking sockets, so a
test knows when the server has closed a connection) that counts the requests it read,
per path and case. Routes:

/dieonreuse   answers a connection's first request; reads the next one, then closes the
              connection without a reply (the server may have acted on it)
/idleclose    answers, then closes the connection (no ``Connection: close``): the next
              request must go on a new connection, and succeed
/idlereset    answers, then resets the connection (SO_LINGER 0)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import select
import socket
import struct
import threading
from collections import Counter
from typing import Any

import pytest

from agenticlens_frames.formats.model import CaseSpec
from agenticlens_frames.runner import RetryPolicy, http_client, run_experiment
from agenticlens_frames.runner.http_client import ConnectionPool, HttpxTransport, open_transport
from agenticlens_frames.runner.http_target import HttpTarget
from agenticlens_frames.runner.retry import TargetFailure

from .conftest import simple_cases, variant

CASES = [CaseSpec(id=f"c{i}", name=f"c{i}", index=i - 1, input=f"parcel {i}") for i in (1, 2, 3, 4)]
# How a call fails when the connection ends without a reply (our client's words and httpx's).
DISCONNECTED = "<urlopen error Server disconnected without sending a response.>"


class Agent:
    """A keep-alive HTTP/1.1 agent on 127.0.0.1, one thread per connection.

    ``received`` counts the requests read in full, per (path, case id), ``connections``
    the connections accepted; ``closed`` is released each time the server closed (or
    reset) a connection after its reply.
    """

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.received: Counter[tuple[str, str]] = Counter()
        self.connections = 0
        self.closed = threading.Semaphore(0)
        self.requests: list[bytes] = []  # each request line, for the proxy test
        self.threads: list[threading.Thread] = []
        self.stopping = threading.Event()
        self._sockets: list[socket.socket] = []
        accept = threading.Thread(target=self._accept, daemon=True)
        accept.start()
        self.threads.append(accept)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _accept(self) -> None:
        while True:
            connection, _ = self.listener.accept()
            if self.stopping.is_set():
                connection.close()
                return
            with self.lock:
                self.connections += 1
                self._sockets.append(connection)
            thread = threading.Thread(target=self._serve, args=(connection,), daemon=True)
            thread.start()
            self.threads.append(thread)

    def _serve(self, connection: socket.socket) -> None:
        stream = connection.makefile("rb")
        served = 0
        try:
            while True:
                line = stream.readline()
                if not line:
                    return
                length = 0
                while (field := stream.readline()) not in (b"\r\n", b"\n", b""):
                    name, _, value = field.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                body = json.loads(stream.read(length))
                target = line.split()[1].decode()
                path = "/" + target.split("://", 1)[-1].split("/", 1)[-1].split("?")[0]
                served += 1
                with self.lock:
                    self.received[(path, body["case_id"])] += 1
                    self.requests.append(line)
                if path.endswith("/dieonreuse") and served > 1:
                    return  # read, never answered: closed below
                answer = json.dumps({"output": f"parcel {body['input']}"}).encode()
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(answer), answer)
                )
                if path.endswith(("/idleclose", "/idlereset")):
                    if path.endswith("/idlereset"):
                        linger = struct.pack("ii", 1, 0)
                        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
                    stream.close()
                    connection.close()
                    self.closed.release()
                    return
        except OSError:
            pass
        finally:
            stream.close()
            connection.close()

    def stop(self) -> None:
        self.stopping.set()
        socket.create_connection(("127.0.0.1", self.port)).close()  # wakes accept()
        with self.lock:
            for connection in self._sockets:
                with contextlib.suppress(OSError):  # already closed
                    connection.shutdown(socket.SHUT_RDWR)
        for thread in self.threads:
            thread.join(10)
        self.listener.close()


@pytest.fixture
def agent():
    server = Agent()
    yield server
    server.stop()


def _target(url: str, transport: Any) -> HttpTarget:
    return HttpTarget(url, transport=transport, timeout_seconds=10, environ={})


async def _send(target: HttpTarget, case: CaseSpec) -> Any:
    try:
        return await target.call(case)
    except TargetFailure as failure:
        return failure


async def _send_all(url: str, *, size: int, kind: type | None = None) -> list[Any]:
    """Every case sent in turn through a new transport for ``url`` (of type ``kind``)."""
    transport = open_transport(url, size=size, timeout=10, tls=None)
    if kind is not None:
        assert isinstance(transport, kind)
    target = _target(url, transport)
    try:
        return [await _send(target, case) for case in CASES]
    finally:
        await transport.aclose()


def _outcome(result: Any) -> str:
    if isinstance(result, TargetFailure):
        assert str(result).endswith(DISCONNECTED), result
        return result.kind
    assert result["output"].startswith("parcel "), result
    return "ok"


def _idle_socket(pool: ConnectionPool) -> socket.socket:
    (connection,) = pool._idle  # the connection the last call left in the pool
    return connection.writer.get_extra_info("socket")


def _wait_readable(pool: ConnectionPool) -> None:
    """Until the server's close (or reset) has reached the pooled connection's socket."""
    readable, _, _ = select.select([_idle_socket(pool).fileno()], [], [], 10)
    assert readable, "the server's close never arrived"


async def _wait_seen(pool: ConnectionPool) -> None:
    """Until the event loop has read the server's close of the pooled connection."""
    (connection,) = pool._idle
    for _ in range(1000):
        if connection.reader.at_eof() or connection.writer.is_closing():
            return
        await asyncio.sleep(0)
    raise AssertionError("the loop never saw the server's close")


def test_a_request_the_server_read_is_not_sent_again(agent):
    """The audit's case: a reused connection that the server closes after reading the
    request fails the call; the request is not sent again on a new connection."""

    results = asyncio.run(_send_all(agent.url("/dieonreuse"), size=4))
    # c2 was read on a reused connection, then the connection closed; from then on the
    # pool keeps no connection (it would lose c4 the same way): c3 and c4 each get one.
    assert [_outcome(r) for r in results] == ["ok", "connection", "ok", "ok"]
    assert agent.received == {("/dieonreuse", case.id): 1 for case in CASES}
    assert agent.connections == 3


@pytest.mark.parametrize("seen_by", ["socket", "loop"])
def test_a_connection_closed_while_idle_is_replaced_before_sending(agent, seen_by):
    """The server closes each connection after its reply; the next call finds it closed
    when taking it from the pool (in the socket, before the loop read the end of stream;
    or in the stream, after), and sends on a new connection: no failure, no duplicate."""

    async def main() -> list[Any]:
        url = agent.url("/idleclose")
        transport = open_transport(url, size=4, timeout=10, tls=None)
        assert isinstance(transport, ConnectionPool)
        target = _target(url, transport)
        results = []
        try:
            for case in CASES:
                if case is not CASES[0]:
                    assert agent.closed.acquire(timeout=10)
                    _wait_readable(transport)  # blocking: the loop does not run meanwhile
                    if seen_by == "loop":
                        await _wait_seen(transport)
                results.append(await _send(target, case))
        finally:
            await transport.aclose()
        return results

    results = asyncio.run(main())
    assert [_outcome(r) for r in results] == ["ok"] * 4
    assert agent.received == {("/idleclose", case.id): 1 for case in CASES}
    assert agent.connections == 4


def test_a_request_the_socket_refused_goes_on_a_new_connection(agent, monkeypatch):
    """The server resets an idle connection just after the pool's check (the check is
    made blind here): the write fails before a byte of the request left, so the server
    cannot have it, and it goes on a new connection — sent once."""
    monkeypatch.setattr(http_client, "_has_input", lambda connection: False)

    async def main() -> list[Any]:
        url = agent.url("/idlereset")
        transport = open_transport(url, size=4, timeout=10, tls=None)
        assert isinstance(transport, ConnectionPool)
        target = _target(url, transport)
        results = [await _send(target, CASES[0])]
        try:
            for case in CASES[1:]:
                assert agent.closed.acquire(timeout=10)
                _wait_readable(transport)
                results.append(await _send(target, case))
        finally:
            await transport.aclose()
        return results

    results = asyncio.run(main())
    assert [_outcome(r) for r in results] == ["ok"] * 4
    assert agent.received == {("/idlereset", case.id): 1 for case in CASES}


def test_through_a_proxy_httpx_does_not_send_it_again_either(agent, monkeypatch):
    """Behind a proxy variable the variant uses httpx: the proxy (the agent here) reads a
    reused connection's request and closes it; httpx fails the call too."""
    monkeypatch.setenv("HTTP_PROXY", agent.url(""))
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)

    # only the proxy can answer for agent.invalid
    url = "http://agent.invalid:8080/dieonreuse"
    results = asyncio.run(_send_all(url, size=1, kind=HttpxTransport))
    assert [_outcome(r) for r in results] == ["ok", "connection", "ok", "connection"]
    assert agent.received == {("/dieonreuse", case.id): 1 for case in CASES}
    assert agent.requests[0].startswith(b"POST http://agent.invalid:8080/dieonreuse ")


def test_the_calls_table_matches_what_the_server_received(agent, write_experiment):
    """Through a run: every request the server read is one row of ``result.calls``; a
    failed call is called again only under a retry policy, as another row."""
    variants = [
        variant("once", agent.url("/once/dieonreuse"), kind="http"),
        variant("retried", agent.url("/retried/dieonreuse"), kind="http"),
    ]
    manifest, suite = write_experiment(
        variants, cases=simple_cases([f"parcel {i}" for i in (1, 2, 3, 4)]), trial_count=1
    )
    retry = {"retried": RetryPolicy(attempts=2, retry_on=frozenset({"connection"}))}
    result = run_experiment(manifest, suite, progress=False, retry=retry, concurrency=1)

    calls = result.calls[result.calls["variant_id"].isin(["once", "retried"])]
    recorded = Counter(zip(calls["variant_id"], calls["case_id"], strict=True))
    received = {(path.split("/")[1], case): n for (path, case), n in agent.received.items()}
    assert dict(recorded) == received
    outcomes = {v: calls[calls["variant_id"] == v]["outcome"].tolist() for v in ("once", "retried")}
    assert outcomes["once"] == ["ok", "connection", "ok", "ok"]
    # c2 fails on a reused connection, then succeeds on a new one, as c3 and c4 do: once
    # a reused connection was lost, the variant's pool keeps none.
    assert outcomes["retried"] == ["ok", "connection", "ok", "ok", "ok"]
    assert received[("retried", "c2")] == 2  # the retry: another call, another row
