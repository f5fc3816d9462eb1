"""The HTTP/1.1 client behind http targets: keep-alive connections on asyncio streams.

httpx costs about 0.6 ms of CPU per request on the benchmark machine (its pool, anyio,
h11), which made 10 000 calls at concurrency 256 take 3x the ideal before any of our work
(docs/performance.md). A target's exchange is always the same ``POST`` of a small JSON
body, so a small client does it: one pool of keep-alive connections per variant, a
request written in one piece, the reply parsed from the stream.

Two implementations of one small interface (:class:`Transport`), both raising the same
few exceptions, which :class:`~agenticlens_frames.runner.http_target.HttpTarget` maps to
failure kinds and messages in one place:

* :class:`ConnectionPool`, ours, for every URL it can serve directly;
* :class:`HttpxTransport`, httpx as before, when a proxy variable of the environment
  applies to the URL (httpx honours them; we do not speak to proxies) or the URL carries
  user information (httpx sends it as basic auth).

What our client sends (what httpx sent, but for the user agent): ``Host`` (with the
port when not the scheme's default), ``Accept: */*``, ``Accept-Encoding: gzip, deflate``
(decoded with :mod:`zlib`; the reply cap applies to the decoded size),
``User-Agent: agenticlens-frames/<version>``, ``Content-Type: application/json``, then
the manifest's headers, which replace any of these (as in httpx), and ``Content-Length``.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import select
import socket
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote, urlsplit

if TYPE_CHECKING:  # ssl and httpx load with the first https or proxied variant
    import ssl

    import httpx

__all__ = [
    "HEADER_LIMIT",
    "KEEPALIVE_SECONDS",
    "MAX_HTTPX_POOLS",
    "SNIPPET_BYTES",
    "ConnectionPool",
    "DecodingError",
    "HttpxTransport",
    "ProtocolError",
    "Reply",
    "ReplyError",
    "ReplyTooLarge",
    "Transport",
    "TransportError",
    "open_transport",
    "trust_context",
    "uses_httpx",
]

#: Largest reply head (status line and headers) read, in bytes.
HEADER_LIMIT = 64 * 1024
#: An idle keep-alive connection older than this is closed, not reused (httpx's default).
KEEPALIVE_SECONDS = 5.0
#: How much of a non-2xx reply's body is read (for the ``detail`` column).
SNIPPET_BYTES = 512
#: Most httpx clients (connection pools) a proxied variant's connections are spread over:
#: httpcore scans its whole pool on every request, so one big pool is slow.
MAX_HTTPX_POOLS = 256

_DEFAULT_PORTS = {"http": 80, "https": 443}
# RFC 3986 characters kept as they are in a path (and a query): httpx encodes the rest.
_PATH_SAFE = "/%!$&'()*+,;=:@-._~"
_QUERY_SAFE = _PATH_SAFE + "?"


class TransportError(Exception):
    """The exchange failed below HTTP: recorded as urllib's ``<urlopen error REASON>``.

    Parameters
    ----------
    message
        What went wrong (the reason, unless a socket error is chained below it).
    kind
        The failure kind: ``connection``, or ``error`` for a URL no client can send to.
    name
        The error's name in the ``detail`` column (default the class name).
    """

    def __init__(self, message: str, *, kind: str = "connection", name: str | None = None):
        super().__init__(message)
        self.kind = kind
        self.name = name or type(self).__name__


class ProtocolError(TransportError):
    """The server broke HTTP/1.1: a malformed or truncated reply, or it hung up."""


class NoReply(ProtocolError):
    """The connection ended before any byte of a reply (named ProtocolError, as before)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, name="ProtocolError")


class ReplyError(Exception):
    """A reply arrived but cannot be used (kind ``error``), e.g. a corrupt gzip body.

    Parameters
    ----------
    message
        What went wrong.
    name
        The error's name in the message (default the class name).
    """

    def __init__(self, message: str, *, name: str | None = None) -> None:
        super().__init__(message)
        self.name = name or type(self).__name__


class DecodingError(ReplyError):
    """A ``Content-Encoding`` that does not decode (httpx's name for it)."""


class ReplyTooLarge(Exception):
    """The reply body exceeds ``max_reply_bytes`` (declared or read).

    Parameters
    ----------
    limit
        The cap, in bytes.
    declared
        The reply's ``Content-Length`` when that is what exceeds the cap.
    """

    def __init__(self, limit: int, declared: int | None) -> None:
        size = f" (Content-Length {declared})" if declared is not None else ""
        super().__init__(f"reply body exceeds the limit of {limit} bytes{size}")


@dataclass(frozen=True, slots=True)
class Reply:
    """A reply: its status, reason phrase and body.

    ``body`` is the whole (decoded) body of a 2xx reply, and at most
    :data:`SNIPPET_BYTES` of any other; ``retry_after`` the reply's ``Retry-After``
    header as sent, if any.
    """

    status: int
    reason: str
    body: bytes
    retry_after: str | None = None


class Transport(Protocol):
    """Sends a variant's requests to its URL (one implementation per client)."""

    async def post(self, body: bytes, headers: Mapping[str, str], limit: int) -> Reply:
        """POST ``body`` as JSON with ``headers``; a 2xx body larger than ``limit`` raises
        :class:`ReplyTooLarge`. Raises only :class:`TimeoutError`, :class:`OSError`,
        :class:`TransportError`, :class:`ReplyError` and :class:`ReplyTooLarge`."""
        ...

    async def aclose(self) -> None:
        """Close every connection."""
        ...


def trust_context() -> ssl.SSLContext:
    """The TLS context httpx 0.28+ builds by default (``httpx.create_ssl_context()``).

    ``SSL_CERT_FILE`` if set, else ``SSL_CERT_DIR``, else certifi's bundle; certificates and
    host names are checked. Read once per run (creating a context costs ~40 ms).
    """
    import ssl

    if os.environ.get("SSL_CERT_FILE"):
        context = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    elif os.environ.get("SSL_CERT_DIR"):
        context = ssl.create_default_context(capath=os.environ["SSL_CERT_DIR"])
    else:
        import certifi  # installed with httpx

        context = ssl.create_default_context(cafile=certifi.where())
    context.set_alpn_protocols(["http/1.1"])
    return context


def uses_httpx(url: str, environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``url`` is sent through httpx rather than our client.

    Yes when the environment names a proxy for its scheme (``HTTP_PROXY``,
    ``HTTPS_PROXY``, ``ALL_PROXY``, any case; what httpx honours) — ``NO_PROXY`` is then
    left to httpx, which applies it exactly as before — or when the URL carries user
    information (httpx sends it as basic auth).

    Examples
    --------
    >>> uses_httpx("http://127.0.0.1:8000/agent", {})
    False
    >>> uses_httpx("http://127.0.0.1:8000/agent", {"ALL_PROXY": "http://proxy:3128"})
    True
    >>> uses_httpx("https://user:pw@agents.example.com/", {})
    True
    """
    parts = urlsplit(url)
    if parts.username is not None or parts.password is not None:
        return True
    proxies = _proxies(os.environ if environ is None else environ)
    return bool(proxies.get(parts.scheme.lower()) or proxies.get("all"))


def _proxies(environ: Mapping[str, str]) -> dict[str, str]:
    # urllib.request.getproxies() reads os.environ (as httpx does); a given mapping is
    # read the same way: NAME_proxy in either case, the lower-case one winning.
    if environ is os.environ:
        from urllib.request import getproxies  # a heavy import: only when asked

        return getproxies()
    found: dict[str, str] = {}
    for name, value in environ.items():
        if value and name.lower().endswith("_proxy"):
            scheme = name.lower()[: -len("_proxy")]
            if name.islower() or scheme not in found:
                found[scheme] = value
    return found


def open_transport(
    url: str,
    *,
    size: int,
    timeout: float,
    tls: ssl.SSLContext | None,
) -> Transport:
    """The transport for a variant: our pool, or httpx when :func:`uses_httpx` says so.

    Parameters
    ----------
    url
        The variant's endpoint.
    size
        Its concurrency limit: the most connections it holds.
    timeout
        Its ``timeout_seconds`` (httpx also applies it to each socket operation).
    tls
        The run's TLS context (:func:`trust_context`), shared by every variant.
    """
    if not uses_httpx(url):
        return ConnectionPool(url, size=size, tls=tls)
    import httpx  # here: a run without a proxied variant never loads it

    shards = min(size, MAX_HTTPX_POOLS)
    per = -(-size // shards)
    limits = httpx.Limits(max_connections=per, max_keepalive_connections=per)
    clients = [
        httpx.AsyncClient(limits=limits, follow_redirects=False, verify=tls or trust_context())
        for _ in range(shards)
    ]
    return HttpxTransport(url, clients, timeout=timeout)


class _Connection:
    """One keep-alive connection: its streams and when it last went idle."""

    __slots__ = ("idle_since", "reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.idle_since = 0.0

    def abort(self) -> None:
        # Abort, not close: no half-read reply may linger, and the socket is released at
        # once (a cancelled call must not leave it behind).
        self.writer.transport.abort()


class ConnectionPool:
    """Keep-alive HTTP/1.1 connections to one URL, for one variant.

    Idle connections are reused most recently used first; one is dropped after
    :data:`KEEPALIVE_SECONDS` idle, any error, ``Connection: close``, an HTTP/1.0 reply
    without keep-alive, a close-delimited body, or a body not read to its end. One the
    server closed while it was idle (or that has anything to read) is dropped when taken
    from the pool, before a request is written to it.

    A request is sent once: only one the socket refused at once — none of it sent — goes
    again, on a new connection. Once written, the server may have read it, so a connection
    that then ends without a reply fails the call (``connection``), as in urllib and httpx;
    the variant's retry policy decides whether it is called again. When that happens on a
    reused connection, the server closes connections it keeps alive as requests reach
    them (one that closes after every reply without saying ``Connection: close``, or at
    its keep-alive timeout): from then on the pool keeps none, and every call has a new
    connection, as AgenticLens's every call does — one more such call would fail the
    same way, not from the agent.

    Parameters
    ----------
    url
        The endpoint (``http`` or ``https``).
    size
        Most idle connections kept (the variant's limit bounds those in use).
    tls
        For https: the context (default :func:`trust_context`); the host name is checked.
    """

    def __init__(self, url: str, *, size: int, tls: ssl.SSLContext | None = None) -> None:
        parts = urlsplit(url)
        self.scheme = parts.scheme.lower()
        host = parts.hostname or ""
        try:
            host.encode("ascii")
        except UnicodeEncodeError:
            host = host.encode("idna").decode("ascii")
        self.host = host
        self.port = parts.port or _DEFAULT_PORTS.get(self.scheme, 80)
        self.size = max(1, int(size))
        self.tls = (tls or trust_context()) if self.scheme == "https" else None
        shown = f"[{host}]" if ":" in host else host
        if parts.port is not None and parts.port != _DEFAULT_PORTS.get(self.scheme):
            shown = f"{shown}:{parts.port}"
        self.authority = shown
        target = quote(parts.path or "/", safe=_PATH_SAFE)
        if parts.query:
            target += "?" + quote(parts.query, safe=_QUERY_SAFE)
        self.target = target
        self._idle: list[_Connection] = []  # a stack: most recently used on top
        #: False once a reused connection ended without a reply: none is kept from then.
        self.reuses = True
        self._numeric = _is_ip(host)
        self._last_headers: dict[str, str] | None = None
        self._last_prefix = b""

    def _request(self, body: bytes, headers: Mapping[str, str]) -> bytes:
        # The head up to the Content-Length value depends only on the headers, which are
        # the same from call to call (their ${NAME} values are read at every send, but
        # rarely change): it is built again only when they do.
        if headers != self._last_headers:
            self._last_prefix = self._prefix(headers)
            self._last_headers = dict(headers)
        return b"%s%d\r\n\r\n%s" % (self._last_prefix, len(body), body)

    def _prefix(self, headers: Mapping[str, str]) -> bytes:
        """The request line and headers, up to ``Content-Length: `` (its value to come)."""
        fields = {
            "host": ("Host", self.authority),
            "accept": ("Accept", "*/*"),
            "accept-encoding": ("Accept-Encoding", "gzip, deflate"),
            "user-agent": ("User-Agent", _user_agent()),
            "content-type": ("Content-Type", "application/json"),
        }
        for name, value in headers.items():
            fields[name.lower()] = (name, value)
        fields.pop("content-length", None)  # ours, last
        pairs = fields.values()
        given = "".join(name + value for name, value in pairs)
        if "\r" in given or "\n" in given or "\0" in given:
            # A header may not smuggle another one (an environment value with a newline).
            raise ProtocolError("illegal character in a request header", name="LocalProtocolError")
        text = "".join(f"{name}: {value}\r\n" for name, value in pairs)
        return f"POST {self.target} HTTP/1.1\r\n{text}Content-Length: ".encode()

    async def post(self, body: bytes, headers: Mapping[str, str], limit: int) -> Reply:
        """See :meth:`Transport.post`."""
        request = self._request(body, headers)
        connection, reused = await self._acquire()
        if not _send(connection, request) and reused:
            # The socket refused the request at once (the server dropped the connection
            # between the idle check and the write): not a byte of it left, so the server
            # cannot have it, and a new connection carries it.
            connection.abort()
            connection = await self._connect()
            _send(connection, request)
        try:
            # From here the server may have the request: a connection that ends without a
            # reply fails the call, and the request is never sent again here (the variant's
            # retry policy decides, and a retry is another recorded call).
            status, reason, fields, version = await _head(connection)
            data, reusable = await _body(
                connection.reader, status, fields, version, limit, 200 <= status < 300
            )
        except BaseException as exc:
            connection.abort()
            if reused and isinstance(exc, (NoReply, ConnectionResetError, BrokenPipeError)):
                self.reuses = False
                self._drop_idle()
            raise
        if reusable and self.reuses:
            self._release(connection)
        else:
            connection.abort()
        after = fields.get(b"retry-after")
        return Reply(status, reason, data, None if after is None else after.decode("latin-1"))

    async def _acquire(self) -> tuple[_Connection, bool]:
        """An idle connection the server has not closed (and True), else a new one."""
        now = asyncio.get_running_loop().time()
        while self._idle:
            connection = self._idle.pop()
            if now - connection.idle_since > KEEPALIVE_SECONDS:
                # The newest has expired, so have all below it.
                connection.abort()
                for old in self._idle:
                    old.abort()
                self._idle.clear()
                break
            if _has_input(connection):
                connection.abort()  # the server closed it (or broke it) while it was idle
                continue
            return connection, True
        return await self._connect(), False

    async def _connect(self) -> _Connection:
        # Addresses tried in order; the first error is the one reported (asyncio would
        # merge different ones into "Multiple exceptions", losing the errno urllib names).
        if self._numeric:
            addresses: list[Any] = [(0, (self.host, self.port))]
        else:
            infos = await asyncio.get_running_loop().getaddrinfo(
                self.host, self.port, type=socket.SOCK_STREAM
            )
            addresses = [(family, address) for family, _, _, _, address in infos]
        first: OSError | None = None
        for family, address in addresses:
            try:
                reader, writer = await asyncio.open_connection(
                    address[0],
                    address[1],
                    family=family,
                    ssl=self.tls,
                    server_hostname=self.host if self.tls is not None else None,
                    limit=HEADER_LIMIT,
                )
            except OSError as exc:
                if self.tls is not None and _is_tls_error(exc):
                    raise  # the server answered: another address would not change that
                first = first or exc
                continue
            return _Connection(reader, writer)
        raise first or OSError(f"no address for {self.host!r}")

    def _release(self, connection: _Connection) -> None:
        if len(self._idle) >= self.size:
            connection.abort()
            return
        connection.idle_since = asyncio.get_running_loop().time()
        self._idle.append(connection)

    def _drop_idle(self) -> None:
        for connection in self._idle:
            connection.abort()
        self._idle.clear()

    async def aclose(self) -> None:
        """Close the idle connections (those in use are closed by their calls)."""
        self._drop_idle()
        await asyncio.sleep(0)  # let the transports release their sockets


_poll = getattr(select, "poll", None)  # select.select where there is none (Windows)


def _has_input(connection: _Connection) -> bool:
    """Whether an idle connection has anything to read, or is closed.

    Its last reply was read to its end, so anything more — the server's end of stream, a
    reset, a stray ``408`` — means the server is done with it: sent a request, it would
    fail (or read a reply that is not its own) after the server may have received it.
    What the loop has already read is in the reader; what it has not yet, in the socket
    (httpcore's check: the socket is readable).
    """
    reader = connection.reader
    if reader.at_eof() or reader.exception() is not None or connection.writer.is_closing():
        return True
    if getattr(reader, "_buffer", None):  # read by the loop, not by a reply
        return True
    sock = connection.writer.get_extra_info("socket")
    fd = -1 if sock is None else sock.fileno()
    if fd < 0:
        return True
    if _poll is None:  # pragma: no cover
        return bool(select.select([fd], [], [], 0)[0])
    poller = _poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


def _send(connection: _Connection, request: bytes) -> bool:
    """Write ``request``; False when the socket refused it at once (nothing was sent).

    A plain transport sends at once what the socket takes and buffers the rest: a socket
    error there closes the transport before :meth:`~asyncio.StreamWriter.write` returns,
    and then none of the request left (a partial send is not an error). Over TLS the
    closing is seen later: the request counts as sent (a failed call, never a duplicate).
    """
    try:
        connection.writer.write(request)
    except BaseException:
        connection.abort()
        raise
    return not connection.writer.is_closing()


async def _head(connection: _Connection) -> tuple[int, str, dict[bytes, bytes], bytes]:
    """Finish sending the request written and read the reply's head (1xx interim replies
    skipped)."""
    reader = connection.reader
    try:
        await connection.writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise ProtocolError("Server disconnected while sending the reply head.") from None
        raise NoReply("Server disconnected without sending a response.") from None
    except asyncio.LimitOverrunError:
        raise ProtocolError(f"reply head larger than {HEADER_LIMIT} bytes") from None
    while True:
        status, reason, fields, version = _parse_head(head)
        if status >= 200:
            return status, reason, fields, version
        if status == 101:
            raise ProtocolError("unexpected 101 Switching Protocols")
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            raise ProtocolError("Server disconnected while sending the reply head.") from None
        except asyncio.LimitOverrunError:
            raise ProtocolError(f"reply head larger than {HEADER_LIMIT} bytes") from None


def _parse_head(head: bytes) -> tuple[int, str, dict[bytes, bytes], bytes]:
    """Status, reason phrase, headers (lower-case names) and version of a reply head.

    Examples
    --------
    >>> _parse_head(b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\n")
    (200, 'OK', {b'content-length': b'2'}, b'HTTP/1.1')
    >>> _parse_head(b"SPAM\\r\\n\\r\\n")
    Traceback (most recent call last):
    ...
    agenticlens_frames.runner.http_client.ProtocolError: malformed status line b'SPAM'
    """
    lines = head[:-4].split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    version = parts[0]
    code = parts[1] if len(parts) > 1 else b""
    if version not in (b"HTTP/1.1", b"HTTP/1.0") or len(code) != 3 or not code.isdigit():
        raise ProtocolError(f"malformed status line {lines[0][:100]!r}")
    # httpx's reading of a reason phrase: ASCII, anything else dropped.
    reason = parts[2].decode("ascii", "ignore") if len(parts) > 2 else ""
    fields: dict[bytes, bytes] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip() or b" " in name:
            raise ProtocolError(f"malformed header line {line[:100]!r}")
        key = name.lower()
        value = value.strip()
        fields[key] = fields[key] + b", " + value if key in fields else value
    return int(code), reason, fields, version


class _Sink:
    """Collects a body, decoded, up to a limit (an error past it, or a cut snippet)."""

    __slots__ = ("decoders", "done", "limit", "parts", "size", "truncate")

    def __init__(self, limit: int, encoding: bytes | None, *, truncate: bool) -> None:
        self.limit = limit
        self.truncate = truncate
        self.parts: list[bytes] = []
        self.size = 0
        self.done = False  # a snippet is full
        # Decoders in the order they apply: the last encoding listed was applied last.
        self.decoders: list[Any] = []
        for coding in reversed((encoding or b"").split(b",")):
            coding = coding.strip().lower()
            if coding in (b"gzip", b"x-gzip"):
                self.decoders.append(zlib.decompressobj(16 + zlib.MAX_WBITS))
            elif coding == b"deflate":
                self.decoders.append(None)  # zlib or raw deflate: known at the first bytes
            # identity, and codings we never advertised, pass through (as in httpx)

    def add(self, chunk: bytes) -> None:
        decoders = self.decoders
        if not decoders:
            self._keep(chunk)
            return
        try:
            for index in range(len(decoders) - 1):  # several encodings: rare, unbounded
                chunk = self._decoder(index, chunk).decompress(chunk)
            # The last decoder is bounded: never more than the limit in memory, however
            # well the body compresses.
            last = self._decoder(len(decoders) - 1, chunk)
            self._keep(last.decompress(chunk, self.limit - self.size + 1))
            while last.unconsumed_tail and not self.done:
                self._keep(last.decompress(last.unconsumed_tail, self.limit - self.size + 1))
        except zlib.error as exc:
            raise DecodingError(str(exc)) from None

    def _decoder(self, index: int, first: bytes) -> Any:
        decoder = self.decoders[index]
        if decoder is None:
            decoder = self.decoders[index] = _deflate(first)
        return decoder

    def _keep(self, chunk: bytes) -> None:
        if not chunk or self.done:
            return
        self.size += len(chunk)
        if self.size > self.limit:
            if not self.truncate:
                raise ReplyTooLarge(self.limit, None)
            chunk = chunk[: len(chunk) - (self.size - self.limit)]
            self.done = True
        self.parts.append(chunk)
        if self.size >= self.limit and self.truncate:
            self.done = True

    def finish(self) -> bytes:
        for index, decoder in enumerate(self.decoders):
            if decoder is None:
                continue
            try:
                tail = decoder.flush()
            except zlib.error as exc:
                raise DecodingError(str(exc)) from None
            for later in self.decoders[index + 1 :]:
                if later is not None and tail:
                    tail = later.decompress(tail)
            self._keep(tail)
        return b"".join(self.parts)


def _deflate(first: bytes) -> Any:
    # "deflate" is meant to be zlib-wrapped, but servers send raw deflate too; httpx
    # accepts both, so do we.
    try:
        zlib.decompressobj().decompress(first[:64])
        return zlib.decompressobj()
    except zlib.error:
        return zlib.decompressobj(-zlib.MAX_WBITS)


async def _body(
    reader: asyncio.StreamReader,
    status: int,
    fields: dict[bytes, bytes],
    version: bytes,
    limit: int,
    whole: bool,
) -> tuple[bytes, bool]:
    """The body (all of it when ``whole``, else a snippet) and whether the connection
    can be reused."""
    connection = fields.get(b"connection", b"").lower()
    keep = b"close" not in connection and (version == b"HTTP/1.1" or b"keep-alive" in connection)
    if status in (204, 304):
        return b"", keep
    sink = _Sink(
        limit if whole else SNIPPET_BYTES, fields.get(b"content-encoding"), truncate=not whole
    )
    coding = fields.get(b"transfer-encoding")
    declared = fields.get(b"content-length")
    if coding is not None:
        if coding.lower().rsplit(b",", 1)[-1].strip() != b"chunked":
            return await _until_close(reader, sink), False
        complete = await _chunked(reader, sink)
        return sink.finish(), keep and complete
    if declared is not None:
        values = {v.strip() for v in declared.split(b",")}
        if len(values) != 1 or not (length := values.pop()).isdigit():
            raise ProtocolError(f"invalid Content-Length {declared[:40]!r}")
        size = int(length)
        if whole and size > limit:
            raise ReplyTooLarge(limit, size)
        if whole and not sink.decoders:  # the common case: one read, no copies
            try:
                return await reader.readexactly(size), keep
            except asyncio.IncompleteReadError as exc:
                got = len(exc.partial)
                raise ProtocolError(f"reply body ended after {got} of {size} bytes") from None
        left = size
        while left and not sink.done:
            chunk = await reader.read(min(left, 1 << 16))
            if not chunk:
                raise ProtocolError(f"reply body ended after {size - left} of {size} bytes")
            left -= len(chunk)
            sink.add(chunk)
        return sink.finish(), keep and left == 0
    return await _until_close(reader, sink), False


async def _until_close(reader: asyncio.StreamReader, sink: _Sink) -> bytes:
    while not sink.done:
        chunk = await reader.read(1 << 16)
        if not chunk:
            break
        sink.add(chunk)
    return sink.finish()


async def _chunked(reader: asyncio.StreamReader, sink: _Sink) -> bool:
    """Read a chunked body into ``sink``; whether it was read to its end."""
    try:
        while not sink.done:
            line = await reader.readuntil(b"\r\n")
            size_text = line.split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise ProtocolError(f"malformed chunk size {size_text[:40]!r}") from None
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":
                    pass  # trailers, ignored
                return True
            left = size
            while left and not sink.done:
                chunk = await reader.read(min(left, 1 << 16))
                if not chunk:
                    raise ProtocolError("reply body ended inside a chunk")
                left -= len(chunk)
                sink.add(chunk)
            if not sink.done and await reader.readexactly(2) != b"\r\n":
                raise ProtocolError("malformed chunk: no CRLF after its data")
    except asyncio.IncompleteReadError:
        raise ProtocolError("reply body ended inside a chunk") from None
    except asyncio.LimitOverrunError:
        raise ProtocolError("malformed chunked body: a line too long") from None
    return False


def _is_tls_error(exc: OSError) -> bool:
    import ssl

    return isinstance(exc, ssl.SSLError)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _user_agent() -> str:
    global _USER_AGENT
    if _USER_AGENT is None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            _USER_AGENT = f"agenticlens-frames/{version('agenticlens-frames')}"
        except PackageNotFoundError:
            _USER_AGENT = "agenticlens-frames"
    return _USER_AGENT


_USER_AGENT: str | None = None


class HttpxTransport:
    """httpx, as before this client: used for a variant whose URL goes through a proxy.

    Parameters
    ----------
    url
        The endpoint.
    clients
        The variant's clients: each call goes to one with no call in flight (the least
        busy when all are busy), so its connections are spread over small pools.
    timeout
        httpx's own per-operation timeout (the caller bounds the whole exchange).
    """

    def __init__(self, url: str, clients: Sequence[httpx.AsyncClient], *, timeout: float):
        self.url = url
        self.clients = list(clients)
        self.timeout = timeout
        self._busy = [0] * len(self.clients)
        self._idle = list(range(len(self.clients) - 1, -1, -1))  # a stack, first on top

    async def post(self, body: bytes, headers: Mapping[str, str], limit: int) -> Reply:
        """See :meth:`Transport.post`."""
        import httpx

        shard = self._take()
        try:
            async with self.clients[shard].stream(
                "POST",
                self.url,
                content=body,
                headers={"Content-Type": "application/json", **headers},
                timeout=self.timeout,
            ) as response:
                ok = 200 <= response.status_code < 300
                data = await _read_httpx(response, limit if ok else SNIPPET_BYTES, truncate=not ok)
                return Reply(
                    response.status_code,
                    response.reason_phrase,
                    data,
                    response.headers.get("retry-after"),
                )
        except httpx.TimeoutException:
            raise TimeoutError from None
        except httpx.TransportError as exc:
            kind = "error" if isinstance(exc, httpx.UnsupportedProtocol) else "connection"
            raise TransportError(str(exc), kind=kind, name=type(exc).__name__) from exc
        except httpx.HTTPError as exc:
            raise ReplyError(str(exc), name=type(exc).__name__) from None
        finally:
            self._give(shard)

    def _take(self) -> int:
        """A client with no call in flight, else the least busy (its pool queues the call)."""
        shard = (
            self._idle.pop()
            if self._idle
            else min(range(len(self._busy)), key=self._busy.__getitem__)
        )
        self._busy[shard] += 1
        return shard

    def _give(self, shard: int) -> None:
        self._busy[shard] -= 1
        if self._busy[shard] == 0:
            self._idle.append(shard)

    async def aclose(self) -> None:
        """Close every client."""
        for client in self.clients:
            await client.aclose()


async def _read_httpx(response: httpx.Response, limit: int, *, truncate: bool) -> bytes:
    declared = response.headers.get("content-length")
    if (
        not truncate
        and declared is not None
        and declared.isascii()
        and declared.isdigit()
        and int(declared) > limit
    ):
        raise ReplyTooLarge(limit, int(declared))
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            if truncate:
                chunks.append(chunk[: len(chunk) - (size - limit)])
                break
            raise ReplyTooLarge(limit, None)
        chunks.append(chunk)
    return b"".join(chunks)
