"""HTTP live targets: one ``POST {"input": ..., "case_id": ...}`` per case (spec §4.3).

Differences from AgenticLens 0.10 (which uses ``urllib`` in a daemon thread per call):

* a variant's calls share its :class:`httpx.AsyncClient` pools (small ones, together
  sized to the variant's concurrency limit), and a timeout cancels the request and closes
  its connection — no thread or socket outlives it;
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
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._secrets import mask, mask_value, remember
from ..errors import InputError
from ..formats.model import CaseSpec
from .payload import InvalidPayload
from .retry import TargetFailure

if TYPE_CHECKING:
    import httpx

__all__ = [
    "DEFAULT_MAX_REPLY_BYTES",
    "HttpTarget",
    "check_headers",
    "expand_headers",
    "header_variables",
]

#: Largest reply body read from an HTTP target, in bytes.
DEFAULT_MAX_REPLY_BYTES = 16 * 1024 * 1024

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_MASK = "***"


def header_variables(value: str) -> list[str]:
    """Names of the ``${NAME}`` references in a header value.

    Examples
    --------
    >>> header_variables("Bearer ${AGENT_TOKEN}")
    ['AGENT_TOKEN']
    """
    return _VARIABLE.findall(value)


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
        name: _VARIABLE.sub(lambda m: environ.get(m.group(1), ""), value)
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
    client
        The variant's client (its limits bound the open connections), or several: each
        call then goes to one with no call in flight (the least busy when all are busy),
        so a variant's connections can be spread over small pools.
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
        client: httpx.AsyncClient | Sequence[httpx.AsyncClient],
        timeout_seconds: float,
        headers: Mapping[str, str] | None = None,
        environ: Mapping[str, str] | None = None,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
    ) -> None:
        import os

        self.url = url
        self.clients = list(client) if isinstance(client, Sequence) else [client]
        self.client = self.clients[0]
        self._busy = [0] * len(self.clients)
        self._idle = list(range(len(self.clients) - 1, -1, -1))  # a stack, first on top
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
        )

    async def call(self, case: CaseSpec) -> Any:
        """The parsed JSON reply, or :class:`TargetFailure` / :class:`InvalidPayload`."""
        import httpx  # loaded with the first http target, not by every run

        expanded = expand_headers(self.headers, self.environ)
        secrets = self._secrets(expanded)
        remember(secrets)
        body = json.dumps({"input": case.input, "case_id": case.id}).encode("utf-8")
        request_headers = {"Content-Type": "application/json", **expanded}
        shard = self._take()
        try:
            async with asyncio.timeout(self.timeout):
                async with self.clients[shard].stream(
                    "POST", self.url, content=body, headers=request_headers, timeout=self.timeout
                ) as response:
                    if not 200 <= response.status_code < 300:
                        snippet = await self._read(response, 512, truncate=True)
                        text = " ".join(snippet.decode("utf-8", "replace").split())[:200]
                        status = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()
                        raise self._failed(
                            _status_kind(response.status_code),
                            case,
                            f"HTTP Error {response.status_code}: {response.reason_phrase}",
                            secrets,
                            detail=f"{status}: {text}" if text else status,
                        )
                    data = await self._read(response, self.max_reply_bytes)
        except TargetFailure:
            raise
        except (TimeoutError, httpx.TimeoutException):
            raise TargetFailure(
                "timeout",
                f"TimeoutError: HTTP target timed out after {self.timeout:g} s for case "
                f"{case.id!r}",
            ) from None
        except _TooLarge as exc:
            raise self._failed("error", case, str(exc), secrets) from None
        except (httpx.TransportError, OSError) as exc:
            kind = "error" if isinstance(exc, httpx.UnsupportedProtocol) else "connection"
            raise self._failed(
                kind,
                case,
                f"<urlopen error {_socket_reason(exc)}>",
                secrets,
                detail=f"{type(exc).__name__}: {exc}",
            ) from None
        except httpx.HTTPError as exc:
            raise self._failed("error", case, f"{type(exc).__name__}: {exc}", secrets) from None
        finally:
            self._give(shard)
        try:
            # A server that echoes a header back must not put it into the report.
            return mask_value(json.loads(data.decode("utf-8")))
        except ValueError as exc:
            raise InvalidPayload(
                self._mask(
                    f"HTTP target returned a body that is not JSON for case {case.id!r}: {exc}",
                    secrets,
                )
            ) from None

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

    async def _read(self, response: httpx.Response, limit: int, *, truncate: bool = False) -> bytes:
        declared = response.headers.get("content-length")
        if not truncate and declared is not None and declared.isdigit() and int(declared) > limit:
            raise _TooLarge(limit, int(declared))
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                if truncate:
                    chunks.append(chunk[: len(chunk) - (size - limit)])
                    break
                raise _TooLarge(limit, None)
            chunks.append(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        """Nothing to release: the runner closes the client."""


class _TooLarge(Exception):
    def __init__(self, limit: int, declared: int | None) -> None:
        size = f" (Content-Length {declared})" if declared is not None else ""
        super().__init__(f"reply body exceeds the limit of {limit} bytes{size}")


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
    while cause is not None:
        if isinstance(cause, OSError) and isinstance(cause.errno, int):
            found = cause
        cause = cause.__cause__ or cause.__context__
    if found is None:
        return str(exc)
    if isinstance(found, socket.gaierror):  # DNS: the resolver's own message
        return str(found)
    return f"[Errno {found.errno}] {os.strerror(found.errno)}"
