"""Masking the secrets a run knows of, in every form they can take in text.

A secret that reaches an error message rarely appears as written: an HTTP library quotes
the header as ``b'Bearer tok\\n'`` (repr-escaped, with its prefix), a server echoes it
URL-encoded, a JSON document escapes it. :func:`mask` replaces each of these forms with
``***``; :func:`mask_value` does so for every string (and key) inside a JSON-like value.

What counts as a secret (registered with :func:`remember` or :func:`remember_environment`):

* the values of environment variables that http ``headers`` reference (``${NAME}``), and
  the expanded header values themselves;
* the password of an http target's URL (``user:password@``, sent as basic auth);
* the values of environment variables whose *names* say they are secret (``*TOKEN*``,
  ``*SECRET*``, ``*PASSWORD*``, ``*API_KEY*``, ``*CREDENTIAL*``, ``*PRIVATE_KEY*``,
  ``*AUTH*``) — python targets read their keys from such variables;
* the values in a ``.env`` file in the manifest's folder or the working directory
  (read only to mask them; the run's environment is not changed).

Values shorter than 4 characters are not masked (they would mask ordinary words).

The masking is applied at the boundaries: the run journal (every record, so the tables,
reports and parquet built from it), target error messages, and the CLI's error output.
"""

from __future__ import annotations

import base64
import json
import os
import re
import threading
import urllib.parse
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "MASK",
    "forms",
    "mask",
    "mask_value",
    "remember",
    "remember_environment",
    "without_password",
]

#: What a secret is replaced with.
MASK = "***"
_MIN_LENGTH = 4
_SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSW|API_?KEY|ACCESS_?KEY|CREDENTIAL|PRIVATE_?KEY|AUTH|SESSION|COOKIE",
    re.IGNORECASE,
)
_BEARER = re.compile(r"^(?:bearer|basic|token)\s+", re.IGNORECASE)
# scheme://user: then the password, up to the last "@" of the authority
_URL_PASSWORD = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://[^/?#@:]*:)[^/?#]*@")

_lock = threading.Lock()
_known: set[str] = set()
_pattern: re.Pattern[str] | None = None


def forms(secret: str) -> set[str]:
    """Every way ``secret`` can be written in a message.

    Examples
    --------
    >>> {"s3cr3t/", "Bearer s3cr3t/\\\\n", "s3cr3t%2F%0A"} <= forms("Bearer s3cr3t/\\n")
    True
    """
    cores = {secret, secret.strip()}
    for core in list(cores):
        cores.add(_BEARER.sub("", core))
    found: set[str] = set()
    for core in cores:
        if len(core.strip()) < _MIN_LENGTH:
            continue
        found.add(core)
        found.add(repr(core)[1:-1])
        found.add(repr(core.encode("utf-8", "surrogatepass"))[2:-1])
        found.add(json.dumps(core)[1:-1])
        found.add(json.dumps(core, ensure_ascii=False)[1:-1])
        found.add(urllib.parse.quote(core, safe=""))
        found.add(urllib.parse.quote_plus(core))
        found.add(urllib.parse.quote(core))
        found.add(base64.b64encode(core.encode("utf-8", "surrogatepass")).decode().rstrip("="))
    return {f for f in found if len(f) >= _MIN_LENGTH}


def remember(values: Iterable[str]) -> None:
    """Register secret values (every form of each) for :func:`mask`."""
    global _pattern
    new = set()
    for value in values:
        if isinstance(value, str) and len(value.strip()) >= _MIN_LENGTH:
            new |= forms(value)
    with _lock:
        if new - _known:
            _known.update(new)
            # Longest first: a secret containing another is masked whole.
            ordered = sorted(_known, key=len, reverse=True)
            _pattern = re.compile("|".join(re.escape(v) for v in ordered))


def _dotenv_values(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")[:1_000_000]
    except OSError:
        return []
    values = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        value = line.split("=", 1)[1].strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values.append(value)
    return values


def remember_environment(
    environ: Mapping[str, str] | None = None, folders: Iterable[str | Path] = ()
) -> None:
    """Register the values of secret-named environment variables and of ``.env`` files in
    ``folders`` (and the working directory)."""
    env = os.environ if environ is None else environ
    values = [v for k, v in env.items() if _SECRET_NAME.search(k) and len(v) >= 8]
    for folder in {Path.cwd(), *map(Path, folders)}:
        values += _dotenv_values(folder / ".env")
    remember(values)


def mask(text: str) -> str:
    """``text`` with every known secret, in any of its forms, replaced by ``***``.

    Examples
    --------
    >>> remember(["Bearer tok-123456\\n"])
    >>> mask("Illegal header value b'Bearer tok-123456\\\\n'")
    "Illegal header value b'***'"
    >>> mask("GET /?key=tok-123456 failed")
    'GET /?key=*** failed'
    """
    pattern = _pattern
    if pattern is None or not isinstance(text, str):
        return text
    return pattern.sub(MASK, text)


def mask_value(value: Any) -> Any:
    """``value`` with :func:`mask` applied to every string and mapping key inside it."""
    if _pattern is None:
        return value
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {mask_value(k): mask_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [mask_value(v) for v in value]
    return value


def without_password(url: str) -> str:
    """``url`` with the password of its user information replaced by ``***`` (an http
    target's ``user:password@`` is sent as basic auth: the URL is shown without it). A
    string ``urlsplit`` refuses is masked all the same.

    Examples
    --------
    >>> without_password("https://bot:pw@1@agents.example.com:8443/v2?x=a@b")
    'https://bot:***@agents.example.com:8443/v2?x=a@b'
    >>> without_password("http://bot:pw@[::1/")
    'http://bot:***@[::1/'
    >>> without_password("http://agents.example.com/v2")
    'http://agents.example.com/v2'
    """
    return _URL_PASSWORD.sub(rf"\1{MASK}@", url, count=1)
