"""HTTP live targets: one ``POST {"input": ..., "case_id": ...}`` per case (spec §4.3).

Differences from AgenticLens 0.10 (which uses ``urllib`` in a daemon thread per call):

* a variant's calls share its pool of keep-alive connections (our own HTTP/1.1 client,
  :mod:`.http_client`; httpx when a proxy applies), sized to the variant's concurrency
  limit, and a timeout cancels the request and closes its connection — no thread or
  socket outlives it;
* ``timeout_seconds`` bounds the whole exchange (connect, send, headers and body), not
  each socket operation, so a server that trickles its reply cannot hold a call forever;
* the reply body is read in chunks and abandoned past ``max_reply_bytes`` (default
  16 MiB), so a 50 MB reply costs 16 MiB at most;
* manifest ``headers`` are sent, with ``${NAME}`` replaced by the environment variable at
  send time. An unset variable is refused before the run starts (naming the header, never
  a value), and expanded values are masked as ``***`` in every recorded error message.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._secrets import mask, mask_value, remember
from ..errors import InputError
from ..formats.manifest import HEADER_VARIABLE
from ..formats.model import CaseSpec
from .http_client import SNIPPET_BYTES, ReplyError, ReplyTooLarge, Transport, TransportError
from .payload import InvalidPayload
from .retry import TargetFailure

__all__ = [
    "DEFAULT_MAX_REPLY_BYTES",
    "HttpTarget",
    "check_headers",
    "expand_headers",
    "header_variables",
]

#: Largest reply body read from an HTTP target, in bytes.
DEFAULT_MAX_REPLY_BYTES = 16 * 1024 * 1024


_MASK = "***"


def header_variables(value: str) -> list[str]:
    """Names of the ``${NAME}`` references in a header value.

    Examples
    --------
    >>> header_variables("Bearer ${AGENT_TOKEN}")
    ['AGENT_TOKEN']
    """
    return HEADER_VARIABLE.findall(value)


def check_headers(
    headers: Mapping[str, str],
    environ: Mapping[str, str],
    *,
    variant_id: str,
    file: str | Path | None = None,
    location: tuple[str | int, ...] = (),
) -> None:
    """Refuse headers that reference unset environment variables (before anything runs).

    The message names the header and the variable, never a value.

    Examples
    --------
    >>> check_headers({"Authorization": "Bearer ${NOPE_TOKEN}"}, {}, variant_id="http")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: header 'Authorization' of variant 'http' uses \
${NOPE_TOKEN}, which is not set (export NOPE_TOKEN before running)
    """
    for name, value in headers.items():
        for variable in header_variables(value):
            if variable not in environ:
                raise InputError(
                    f"header {name!r} of variant {variant_id!r} uses ${{{variable}}}, "
                    "which is not set",
                    file=file,
                    location=(*location, "headers") if location else None,
                    hint=f"export {variable} before running",
                )


def expand_headers(headers: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """Header values with every ``${NAME}`` replaced from ``environ``.

    Examples
    --------
    >>> expand_headers({"X-Key": "k-${K}"}, {"K": "123"})
    {'X-Key': 'k-123'}
    """
    return {
        name: HEADER_VARIABLE.sub(lambda m: environ.get(m.group(1), ""), value)
        for name, value in headers.items()
    }


def _status_kind(status: int) -> str:
    if status == 429:
        return "http_429"
    if 500 <= status <= 599:
        return "http_5xx"
    return "error"


class HttpTarget:
    """POSTs each case to ``url`` and returns the parsed JSON reply.

    Parameters
    ----------
    url
        The endpoint.
    transport
        The variant's connections (:func:`~.http_client.open_transport`): its size bounds
        the open connections.
    timeout_seconds
        For the whole exchange.
    headers
        Header templates as written in the manifest.
    environ
        Where ``${NAME}`` values come from (read at every send).
    max_reply_bytes
        Replies larger than this fail the call with kind ``error``.
    """

    def __init__(
        self,
        url: str,
        *,
        transport: Transport,
        timeout_seconds: float,
        headers: Mapping[str, str] | None = None,
        environ: Mapping[str, str] | None = None,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
    ) -> None:
        import os

        self.url = url
        self.transport = transport
        self.timeout = float(timeout_seconds)
        self.headers = dict(headers or {})
        self.environ = os.environ if environ is None else environ
        self.max_reply_bytes = int(max_reply_bytes)

    def _secrets(self, expanded: dict[str, str]) -> list[str]:
        # Every header value and every variable it uses, longest first, so no part of a
        # header can surface in an error message (short values would mask ordinary words).
        values = set(expanded.values())
        for template in self.headers.values():
            values.update(self.environ.get(v, "") for v in header_variables(template))
        return sorted((v for v in values if len(v) >= 4), key=len, reverse=True)

    def _mask(self, text: str, secrets: list[str]) -> str:
        # Every form of each secret (stripped, without "Bearer ", repr-escaped, URL-encoded).
        remember(secrets)
        for secret in secrets:
            text = text.replace(secret, _MASK)
        return mask(text)

    def _failed(
        self,
        kind: str,
        case: CaseSpec,
        reason: str,
        secrets: list[str],
        detail: str | None = None,
        retry_after: float | None = None,
    ) -> TargetFailure:
        # AgenticLens' wording: "ValueError: HTTP target request failed for case 'c1': ..."
        # where the reason is what urllib says ("HTTP Error 500: Internal Server Error",
        # "<urlopen error [Errno 111] Connection refused>").
        return TargetFailure(
            kind,
            self._mask(
                f"ValueError: HTTP target request failed for case {case.id!r}: {reason}", secrets
            ),
            None if detail is None else self._mask(detail, secrets),
            retry_after,
        )

    async def call(self, case: CaseSpec) -> Any:
        """The parsed JSON reply, or :class:`TargetFailure` / :class:`InvalidPayload`."""
        expanded = expand_headers(self.headers, self.environ) if self.headers else {}
        secrets = self._secrets(expanded) if expanded else []
        remember(secrets)
        body = json.dumps({"input": case.input, "case_id": case.id}).encode("utf-8")
        try:
            async with asyncio.timeout(self.timeout):
                reply = await self.transport.post(body, expanded, self.max_reply_bytes)
        except TimeoutError:
            raise TargetFailure(
                "timeout",
                f"TimeoutError: HTTP target timed out after {self.timeout:g} s for case "
                f"{case.id!r}",
            ) from None
        except ReplyTooLarge as exc:
            raise self._failed("error", case, str(exc), secrets) from None
        except ReplyError as exc:
            raise self._failed("error", case, f"{exc.name}: {exc}", secrets) from None
        except (TransportError, OSError) as exc:
            kind = exc.kind if isinstance(exc, TransportError) else "connection"
            name = exc.name if isinstance(exc, TransportError) else type(exc).__name__
            raise self._failed(
                kind,
                case,
                f"<urlopen error {_socket_reason(exc)}>",
                secrets,
                detail=f"{name}: {exc}",
            ) from None
        status = f"HTTP {reply.status} {reply.reason}".rstrip()
        if not 200 <= reply.status < 300:
            text = _snippet(reply.body)
            raise self._failed(
                _status_kind(reply.status),
                case,
                f"HTTP Error {reply.status}: {reply.reason}",
                secrets,
                detail=f"{status}: {text}" if text else status,
                # a 429 or 503 may say when to come back: the retry policy waits that long
                retry_after=_retry_after(reply.retry_after),
            )
        try:
            # A server that echoes a header back must not put it into the report.
            return mask_value(json.loads(reply.body.decode("utf-8")))
        except ValueError as exc:
            # The package's words, then what the server sent (an HTML error page of a
            # proxy, say) for the call's detail.
            text = _snippet(reply.body)
            raise InvalidPayload(
                self._mask(
                    f"HTTP target returned a body that is not JSON for case {case.id!r}: {exc}",
                    secrets,
                ),
                self._mask(f"{status}: {text}" if text else f"{status}: an empty body", secrets),
            ) from None

    def close(self) -> None:
        """Nothing to release: the runner closes the transport."""


def _snippet(body: bytes) -> str:
    """The start of a reply body on one line (for the ``detail`` column).

    Examples
    --------
    >>> _snippet(b"<html>\\n  <body>Bad gateway</body>\\n</html>")
    '<html> <body>Bad gateway</body> </html>'
    >>> _snippet(b"caf\\xe9") == "caf\\ufffd"  # not UTF-8: replaced, never an error
    True
    """
    return " ".join(body[:SNIPPET_BYTES].decode("utf-8", "replace").split())[:200]


def _retry_after(value: str | None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait: a number of seconds or an HTTP date
    (RFC 9110, section 10.2.3); None when absent or unreadable.

    Examples
    --------
    >>> _retry_after("3"), _retry_after(" 0 "), _retry_after("soon"), _retry_after(None)
    (3.0, 0.0, None, None)
    >>> _retry_after("²")  # a digit to str.isdigit(), not to float()
    >>> _retry_after("Wed, 21 Oct 2015 07:28:00 GMT")  # a date in the past: no wait
    0.0
    """
    if value is None:
        return None
    text = value.strip()
    if text.isascii() and text.isdigit():  # ("²".isdigit(): float() cannot read it)
        return float(text)
    from datetime import UTC, datetime
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # "-0000": UTC by RFC 5322
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _socket_reason(exc: BaseException) -> str:
    """What urllib would name as the reason of a failed connection: the socket error at the
    bottom of the exception chain (``[Errno 111] Connection refused``), else ``exc``.

    Examples
    --------
    >>> try:
    ...     try:
    ...         raise ConnectionRefusedError(111, "Connect call failed")
    ...     except OSError as inner:
    ...         raise OSError("All connection attempts failed") from inner
    ... except OSError as outer:
    ...     _socket_reason(outer)
    '[Errno 111] Connection refused'
    """
    import os
    import socket

    found: BaseException | None = None
    cause: BaseException | None = exc
    seen: set[int] = set()
    while cause is not None and id(cause) not in seen:  # a chain can loop
        seen.add(id(cause))
        if isinstance(cause, OSError) and isinstance(cause.errno, int):
            found = cause
        cause = cause.__cause__ or cause.__context__
    if found is None:
        return str(exc)
    if isinstance(found, socket.gaierror):  # DNS: the resolver's own message
        return str(found)
    if type(found).__module__ == "ssl":  # TLS: urllib shows the SSL error itself
        return str(found)
    return f"[Errno {found.errno}] {os.strerror(found.errno)}"
