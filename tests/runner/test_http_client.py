"""Our HTTP/1.1 client (runner/http_client.py) against real local servers.

Each test starts an asyncio server on 127.0.0.1 that answers the way the test names
(chunked, close-delimited, 1xx first, malformed, trickling, gzip, TLS...) and sends a
case through :class:`HttpTarget`, so what is checked is what a run records: the parsed
reply, or the failure's kind and message. Nothing of the client is mocked.

tests/fixtures/tls holds a self-signed certificate for localhost and 127.0.0.1, made once
with ``openssl req -x509 -newkey rsa:2048 -days 36500 -nodes -subj /CN=localhost
-addext subjectAltName=DNS:localhost,IP:127.0.0.1``.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import ssl
import struct
import threading
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from agenticlens_frames.formats.model import CaseSpec
from agenticlens_frames.runner.http_client import (
    HEADER_LIMIT,
    ConnectionPool,
    HttpxTransport,
    open_transport,
    trust_context,
)
from agenticlens_frames.runner.http_target import HttpTarget
from agenticlens_frames.runner.retry import TargetFailure

TLS = Path(__file__).resolve().parents[1] / "fixtures" / "tls"
PAYLOAD = {"output": "refund parcel ok", "trace": {"spans": []}}
BODY = json.dumps(PAYLOAD).encode()

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, "Server"], Awaitable[None]]


class Server:
    """An asyncio server on 127.0.0.1 running ``handler`` for each connection."""

    def __init__(
        self, handler: Handler, *, tls: ssl.SSLContext | None = None, host: str = "127.0.0.1"
    ) -> None:
        self.handler = handler
        self.host = host
        self.tls = tls
        self.connections = 0
        self.requests: list[bytes] = []  # each request's head
        self.closed_by_client = asyncio.Event()

    async def __aenter__(self) -> Server:
        self.server = await asyncio.start_server(self._handle, self.host, 0, ssl=self.tls)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()

    def url(self, path: str = "/agent", scheme: str = "http", host: str = "127.0.0.1") -> str:
        return f"{scheme}://{host}:{self.port}{path}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handler(reader, writer, self)
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            writer.close()

    async def request(self, reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
        """Read one request (head, body); an empty head when the client hung up."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            self.closed_by_client.set()
            return b"", b""
        self.requests.append(head)
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return head, await reader.readexactly(length)


def reply(body: bytes = BODY, status: bytes = b"200 OK", *headers: bytes) -> bytes:
    """A reply with a Content-Length."""
    lines = [b"HTTP/1.1 " + status, b"Content-Length: " + str(len(body)).encode(), *headers]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def keep_alive(answer: bytes) -> Handler:
    """Answer every request on a connection with ``answer``."""

    async def handle(reader, writer, server):
        while True:
            head, _ = await server.request(reader)
            if not head:
                return
            writer.write(answer)
            await writer.drain()

    return handle


def once(answer: bytes) -> Handler:
    """Answer one request with ``answer``, then close the connection."""

    async def handle(reader, writer, server):
        await server.request(reader)
        writer.write(answer)
        await writer.drain()

    return handle


CASE = CaseSpec(id="c1", name="c1", index=0, input="where is my parcel")


async def call(
    url: str,
    *,
    times: int = 1,
    timeout: float = 5.0,
    limit: int = 1 << 20,
    headers: dict[str, str] | None = None,
    tls: ssl.SSLContext | None = None,
    environ: dict[str, str] | None = None,
) -> list[Any]:
    """Send CASE ``times`` in turn over one transport: each reply, or its TargetFailure."""
    transport = open_transport(url, size=4, timeout=timeout, tls=tls)
    target = HttpTarget(
        url,
        transport=transport,
        timeout_seconds=timeout,
        headers=headers,
        environ=environ or {},
        max_reply_bytes=limit,
    )
    results: list[Any] = []
    try:
        for _ in range(times):
            try:
                results.append(await target.call(CASE))
            except TargetFailure as failure:
                results.append(failure)
    finally:
        await transport.aclose()
    return results


def run(handler: Handler, **options: Any) -> tuple[list[Any], Server]:
    """Serve ``handler`` and :func:`call` it; the results and the server."""
    tls = options.pop("server_tls", None)
    path = options.pop("path", "/agent")

    async def main() -> tuple[list[Any], Server]:
        async with Server(handler, tls=tls) as server:
            scheme = "https" if tls is not None else "http"
            results = await call(server.url(path, scheme), **options)
            await asyncio.sleep(0.05)  # the server sees the client's close
            return results, server

    return asyncio.run(main())


def failure(result: Any) -> TargetFailure:
    assert isinstance(result, TargetFailure), result
    return result


PREFIX = "ValueError: HTTP target request failed for case 'c1': "


def test_request_carries_what_httpx_sent_and_the_manifest_headers():
    (result,), server = run(
        keep_alive(reply()),
        path="/v2/answer?team=a b",
        headers={"X-Key": "k-${K}", "accept": "application/json"},
        environ={"K": "123"},
    )
    assert result == PAYLOAD
    head = server.requests[0].decode()
    lines = head.split("\r\n")
    assert lines[0] == "POST /v2/answer?team=a%20b HTTP/1.1"
    fields = {k.lower(): v for k, v in (line.split(": ", 1) for line in lines[1:] if line)}
    assert fields["host"] == f"127.0.0.1:{server.port}"
    assert fields["accept"] == "application/json"  # the manifest's value replaces ours
    assert fields["accept-encoding"] == "gzip, deflate"
    assert fields["content-type"] == "application/json"
    assert fields["user-agent"].startswith("agenticlens-frames")
    assert fields["x-key"] == "k-123"
    body = json.dumps({"input": CASE.input, "case_id": "c1"}).encode()
    assert fields["content-length"] == str(len(body))


def test_keep_alive_connection_is_reused():
    results, server = run(keep_alive(reply()), times=3)
    assert results == [PAYLOAD] * 3
    assert server.connections == 1 and len(server.requests) == 3


def test_chunked_reply_with_extensions_and_trailers():
    chunks = [BODY[:10], BODY[10:]]
    body = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(c), c) for c in chunks)
    answer = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + body
        + b"0\r\nX-Trailer: yes\r\n\r\n"
    )
    results, server = run(keep_alive(answer), times=2)
    assert results == [PAYLOAD, PAYLOAD]
    assert server.connections == 1  # read to its end: reused


def test_close_delimited_reply_is_read_to_the_end_and_not_reused():
    results, server = run(once(b"HTTP/1.1 200 OK\r\n\r\n" + BODY), times=2)
    assert results == [PAYLOAD, PAYLOAD]
    assert server.connections == 2


def test_interim_1xx_replies_are_skipped():
    answer = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\nX: y\r\n\r\n" + reply()
    results, server = run(keep_alive(answer), times=2)
    assert results == [PAYLOAD, PAYLOAD] and server.connections == 1


@pytest.mark.parametrize(
    ("status_line", "extra", "connections"),
    [
        (b"HTTP/1.1 200 OK", b"Connection: close", 2),
        (b"HTTP/1.0 200 OK", b"X-Other: 1", 2),
        (b"HTTP/1.0 200 OK", b"Connection: keep-alive", 1),
    ],
)
def test_connection_close_and_http_10_are_not_reused(status_line, extra, connections):
    answer = status_line + b"\r\nContent-Length: %d\r\n%s\r\n\r\n%s" % (len(BODY), extra, BODY)
    results, server = run(keep_alive(answer), times=2)
    assert results == [PAYLOAD, PAYLOAD]
    assert server.connections == connections


def test_reused_connection_closed_after_reading_the_request_fails_the_call():
    async def handle(reader, writer, server):
        if server.connections == 1:
            # Answer one request, then read the next one and drop the connection without
            # a reply: the server may have acted on it, so it is never sent again.
            await server.request(reader)
            writer.write(reply())
            await writer.drain()
            await server.request(reader)
            writer.transport.abort()
            return
        await keep_alive(reply())(reader, writer, server)

    results, server = run(handle, times=3)
    assert results[0] == PAYLOAD and results[2] == PAYLOAD
    assert failure(results[1]).kind == "connection"
    assert str(results[1]) == (
        PREFIX + "<urlopen error Server disconnected without sending a response.>"
    )
    assert server.connections == 2 and len(server.requests) == 3


def test_fresh_connection_closed_without_a_reply_is_not_retried():
    async def handle(reader, writer, server):
        await server.request(reader)

    (result,), server = run(handle)
    assert failure(result).kind == "connection"
    assert str(result) == (
        PREFIX + "<urlopen error Server disconnected without sending a response.>"
    )
    assert len(server.requests) == 1


def test_connection_closed_by_the_server_after_its_reply_is_replaced():
    async def handle(reader, writer, server):
        await server.request(reader)
        writer.write(reply())  # keep-alive by HTTP/1.1 rules, but closed right after
        await writer.drain()

    results, server = run(handle, times=2)
    assert results == [PAYLOAD, PAYLOAD]
    # the closed connection is seen when taken from the pool: dropped before any request
    assert server.connections == 2 and len(server.requests) == 2


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (b"SPAM/1.1 200 OK\r\n\r\n", "malformed status line b'SPAM/1.1 200 OK'"),
        (b"HTTP/1.1 2000 OK\r\n\r\n", "malformed status line"),
        (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "malformed header line"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n", "invalid Content-Length"),
        (
            b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * (HEADER_LIMIT + 10) + b"\r\n\r\n",
            f"reply head larger than {HEADER_LIMIT} bytes",
        ),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + BODY[:10], "ended after 10 of 100"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "malformed chunk size"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n40\r\nabc", "inside a chunk"),
        (b"HTTP/1.1 200 OK\r\nContent-", "Server disconnected while sending the reply head"),
    ],
)
def test_malformed_or_truncated_replies_fail_at_once_as_connection_errors(answer, message):
    # The server closes after its reply: a client waiting for more would hang until the
    # 5 s timeout, which would be a "timeout", not a "connection" failure.
    (result,), _ = run(once(answer), timeout=5.0)
    assert failure(result).kind == "connection"
    assert str(result).startswith(PREFIX + "<urlopen error ")
    assert message in str(result)


def test_trickling_server_hits_the_whole_exchange_timeout_and_the_connection_closes():
    async def handle(reader, writer, server):
        await server.request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
        try:
            for _ in range(100):  # a byte every 20 ms: each read is quick, the whole is not
                writer.write(b"x")
                await writer.drain()
                await asyncio.sleep(0.02)
        except ConnectionError:
            server.closed_by_client.set()

    (result,), server = run(handle, timeout=0.3)
    assert failure(result).kind == "timeout"
    assert str(result) == "TimeoutError: HTTP target timed out after 0.3 s for case 'c1'"
    assert server.closed_by_client.is_set()


def test_declared_and_streamed_bodies_above_the_limit():
    big = b"x" * 5000
    declared, _ = run(keep_alive(reply(big)), limit=4096)
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"".join(
        b"400\r\n" + big[:1024] + b"\r\n" for _ in range(5)
    )
    streamed, _ = run(keep_alive(chunked), limit=4096)
    assert failure(declared[0]).kind == "error"
    assert str(declared[0]) == (
        PREFIX + "reply body exceeds the limit of 4096 bytes (Content-Length 5000)"
    )
    assert failure(streamed[0]).kind == "error"
    assert str(streamed[0]) == PREFIX + "reply body exceeds the limit of 4096 bytes"


def _deflate_raw(data: bytes) -> bytes:
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


@pytest.mark.parametrize(
    ("coding", "pack"),
    [("gzip", gzip.compress), ("deflate", zlib.compress), ("deflate", _deflate_raw)],
)
def test_compressed_replies_are_decoded(coding, pack):
    answer = reply(pack(BODY), b"200 OK", b"Content-Encoding: " + coding.encode())
    results, server = run(keep_alive(answer), times=2)
    assert results == [PAYLOAD, PAYLOAD] and server.connections == 1


def test_the_limit_applies_to_the_decoded_size_and_bad_gzip_is_an_error():
    bomb = gzip.compress(b" " * 10_000_000)  # ~10 KB that inflate to 10 MB
    assert len(bomb) < 1 << 20
    gzipped = reply(bomb, b"200 OK", b"Content-Encoding: gzip")
    (big,), _ = run(keep_alive(gzipped), limit=1 << 20)
    assert failure(big).kind == "error"
    assert str(big) == PREFIX + f"reply body exceeds the limit of {1 << 20} bytes"
    corrupt = reply(b"not gzip at all", b"200 OK", b"Content-Encoding: gzip")
    (bad,), _ = run(keep_alive(corrupt))
    assert failure(bad).kind == "error"
    assert str(bad).startswith(PREFIX + "DecodingError: Error -3 while decompressing")


@pytest.mark.parametrize(
    ("status", "kind"), [(b"503 Slow Down", "http_5xx"), (b"429 Too Many Requests", "http_429")]
)
def test_error_reply_keeps_reason_phrase_and_a_snippet(status, kind):
    text = "busy " * 40_000  # 200 KB: only the first 512 bytes are read
    results, server = run(keep_alive(reply(text.encode(), status)), times=2)
    code, reason = status.decode().split(" ", 1)
    for result in results:
        assert failure(result).kind == kind
        assert str(result) == f"{PREFIX}HTTP Error {code}: {reason}"
        assert result.detail == f"HTTP {code} {reason}: " + " ".join(text.split())[:200]
    assert server.connections == 2  # the body was not read to its end: not reused


def test_header_values_cannot_inject_headers():
    (result,), server = run(
        keep_alive(reply()), headers={"X-Key": "${K}"}, environ={"K": "a\r\nX-Evil: 1"}
    )
    assert failure(result).kind == "connection"
    assert "illegal character in a request header" in str(result)
    assert server.requests == []


def _server_tls() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(TLS / "localhost.crt", TLS / "localhost.key")
    return context


def test_tls_with_a_trusted_certificate(monkeypatch):
    # SSL_CERT_FILE is how a user points httpx (and so us) at their own CA.
    monkeypatch.setenv("SSL_CERT_FILE", str(TLS / "localhost.crt"))
    results, server = run(
        keep_alive(reply()), server_tls=_server_tls(), tls=trust_context(), times=3
    )
    # kept alive: nothing the TLS layer sends after the handshake reads as a closed socket
    assert results == [PAYLOAD] * 3 and server.connections == 1


def test_tls_connection_closed_by_the_server_after_its_reply_is_replaced(monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(TLS / "localhost.crt"))

    async def handle(reader, writer, server):
        await server.request(reader)
        writer.write(reply())
        await writer.drain()

    results, server = run(handle, server_tls=_server_tls(), tls=trust_context(), times=3)
    assert results == [PAYLOAD] * 3
    assert server.connections == 3 and len(server.requests) == 3


def test_tls_with_an_untrusted_certificate_fails_as_a_connection_error(monkeypatch):
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    (result,), server = run(keep_alive(reply()), server_tls=_server_tls(), tls=trust_context())
    assert failure(result).kind == "connection"
    assert "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed" in str(result)
    assert server.requests == []


def test_tls_checks_the_server_name(monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(TLS / "localhost.crt"))

    async def main() -> Any:
        # The certificate names localhost and 127.0.0.1, not 127.0.0.2.
        async with Server(keep_alive(reply()), tls=_server_tls(), host="127.0.0.2") as server:
            url = f"https://127.0.0.2:{server.port}/agent"
            return (await call(url, tls=trust_context()))[0]

    result = asyncio.run(main())
    assert failure(result).kind == "connection"
    assert "IP address mismatch" in str(result) or "doesn't match" in str(result)


def test_a_proxy_variable_switches_the_variant_to_httpx(monkeypatch):
    async def proxy(reader, writer, server):
        await server.request(reader)
        writer.write(reply())
        await writer.drain()

    async def main() -> tuple[Any, Server, Any, Any]:
        async with Server(proxy) as server:
            monkeypatch.setenv("HTTP_PROXY", server.url(""))
            monkeypatch.delenv("NO_PROXY", raising=False)
            monkeypatch.delenv("no_proxy", raising=False)
            # the target's host never resolves: only the proxy can answer for it
            url = "http://agent.invalid:8080/answer"
            kind = type(open_transport(url, size=1, timeout=5, tls=None))
            (result,) = await call(url)
            monkeypatch.delenv("HTTP_PROXY")
            direct = type(open_transport(url, size=1, timeout=5, tls=None))
            return result, server, kind, direct

    result, server, kind, direct = asyncio.run(main())
    assert kind is HttpxTransport and direct is ConnectionPool
    assert result == PAYLOAD
    # a proxy receives the absolute URL in the request line
    assert server.requests[0].startswith(b"POST http://agent.invalid:8080/answer HTTP/1.1")


@pytest.mark.differential
def test_tls_failure_reads_as_the_package(monkeypatch):
    """An untrusted certificate is worded as AgenticLens 0.10 (urllib) words it."""
    live = pytest.importorskip("agentic_evals.live", reason="the real agentic-evals is needed")
    from agentic_evals.models import HTTPTarget, TestCase
    from agentic_evals.reliability import describe_error

    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    context = _server_tls()
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)
    port = listener.getsockname()[1]
    done = threading.Event()

    def serve() -> None:  # handshakes until done (urllib is synchronous: a thread)
        while not done.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                continue
            connection.settimeout(5)
            try:
                with context.wrap_socket(connection, server_side=True) as tls:
                    tls.recv(1)
            except OSError:
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    url = f"https://127.0.0.1:{port}/agent"
    try:
        case = TestCase(id="c1", name="c1", input="parcel", expected_contains=["x"])
        with pytest.raises(ValueError) as caught:
            live.http_payload(HTTPTarget(url=url, timeout_seconds=5), case)
        (ours,) = asyncio.run(call(url, tls=trust_context()))
    finally:
        done.set()
        thread.join(5)
        listener.close()
    assert failure(ours).kind == "connection"
    assert str(ours) == describe_error(caught.value)


def test_a_header_value_changed_between_calls_is_sent():
    # The request head is reused while the headers stay the same: a rotated token must
    # still reach the server on the next call.
    environ = {"K": "first-token"}

    async def main() -> tuple[list[Any], Server]:
        async with Server(keep_alive(reply())) as server:
            url = server.url()
            transport = open_transport(url, size=1, timeout=5, tls=None)
            target = HttpTarget(
                url,
                transport=transport,
                timeout_seconds=5,
                headers={"Authorization": "Bearer ${K}"},
                environ=environ,
            )
            results = [await target.call(CASE)]
            environ["K"] = "second-token"
            results.append(await target.call(CASE))
            results.append(await target.call(CASE))
            await transport.aclose()
            return results, server

    results, server = asyncio.run(main())
    assert results == [PAYLOAD] * 3
    sent = [line for head in server.requests for line in head.split(b"\r\n") if b"Bearer" in line]
    assert sent == [
        b"Authorization: Bearer first-token",
        b"Authorization: Bearer second-token",
        b"Authorization: Bearer second-token",
    ]


def test_a_reset_connection_fails_as_urllib_words_it():
    async def handle(reader, writer, server):
        await server.request(reader)
        # SO_LINGER 0: the close sends a reset, not an orderly end of stream.
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()

    (result,), server = run(handle)
    assert failure(result).kind == "connection"
    assert str(result) == PREFIX + "<urlopen error [Errno 104] Connection reset by peer>"
    assert result.detail.startswith("ConnectionResetError: [Errno 104]")
    assert len(server.requests) == 1  # a fresh connection is not retried


def test_a_server_closing_kept_alive_connections_gets_new_ones_after_the_first_loss():
    """A server that closes each connection a moment after its reply, without saying
    ``Connection: close``: every reuse wrote the request as the close came, and every
    other call failed with no reply (an audit counted 19 of 270 calls from a healthy
    server as target errors). After the first such loss the pool keeps no connection:
    one call fails, every later one is answered on a new connection, and each is sent
    once."""

    async def handle(reader, writer, server):
        await server.request(reader)
        writer.write(reply())
        await writer.drain()
        await asyncio.sleep(0.05)  # the close comes after the client took it back

    results, server = run(handle, times=8)
    lost = [r for r in results if isinstance(r, TargetFailure)]
    assert results[0] == PAYLOAD and len(lost) == 1 and lost[0].kind == "connection"
    assert results[2:] == [PAYLOAD] * 6
    # The lost request reached no handler, and was not sent again: 7 connections, 7 read.
    assert server.connections == 7 and len(server.requests) == 7
