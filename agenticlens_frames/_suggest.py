"""The closest known name for a misspelt one, and the refusal that names it.

One place for "did you mean …?": manifest and suite keys, variant ids, factor names and
levels, option values. It imports nothing of the package but its errors, so any module may
use it (the formats' readers as well as the statistics' option checks).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from .errors import InputError

__all__ = ["close_match", "require_known"]


# Likely names for a field that string similarity ranks badly (``trials`` is closer to
# ``minimum_trials`` than to ``trial_count``). Used only when the target is a valid choice.
_ALIASES = {
    "trials": "trial_count",
    "trial": "trial_count",
    "n_trials": "trial_count",
    "num_trials": "trial_count",
    "seed": "random_seed",
    "baseline": "baseline_variant_id",
    "baseline_id": "baseline_variant_id",
    "workers": "max_workers",
    "timeout": "timeout_seconds",
    "kind": "target_kind",
    "type": "target_kind",
    "k": "pass_k",
    "expected": "expected_output",
    "contains": "expected_contains",
    "tools": "required_tools",
    "schema": "output_json_schema",
    "json_schema": "output_json_schema",
}


def require_known(
    what: str, given: Iterable[Any], known: Iterable[str], *, location: str | None = None
) -> None:
    """Refuse ``given`` when any of it is not in ``known``: the error names what is unknown
    (the first five, with how many in all), lists what exists and suggests the closest
    name for each (misspelt variant ids, factor names, levels).

    Examples
    --------
    >>> require_known("variant id", ["prompt-v2"], ["baseline", "prompt-v2"])
    >>> require_known("variant id", ["promt-v2"], ["baseline", "prompt-v2"])
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: unknown variant id 'promt-v2' (did you mean
    'prompt-v2'? known: baseline, prompt-v2)
    >>> require_known("variant id", ["promt-v2", "xyz"], ["baseline", "prompt-v2"])
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: unknown variant id: 'promt-v2', 'xyz' (did you
    mean 'prompt-v2' for 'promt-v2'? known: baseline, prompt-v2)
    """
    choices = [str(k) for k in known]
    present = set(choices)
    unknown = list(dict.fromkeys(str(name) for name in given if str(name) not in present))
    if not unknown:
        return
    shown = ", ".join(choices[:30]) + (f" … ({len(choices)} in all)" if len(choices) > 30 else "")
    if len(unknown) == 1:
        match = close_match(unknown[0], choices)
        message = f"unknown {what} {unknown[0]!r}"
        guess = f"did you mean {match!r}? " if match else ""
    else:
        # Every unknown name at once (a fix of one then revealed the next), a few only: a
        # column of ten thousand unknown ids would be a page, and a close match of each slow.
        named = unknown[:5]
        message = f"unknown {what}: " + ", ".join(map(repr, named))
        message += f" … ({len(unknown)} in all)" if len(unknown) > len(named) else ""
        pairs = [(name, close_match(name, choices)) for name in named]
        guesses = ", ".join(f"{match!r} for {name!r}" for name, match in pairs if match)
        guess = f"did you mean {guesses}? " if guesses else ""
    raise InputError(message, location=location, hint=guess + f"known: {shown or 'none'}")


def close_match(word: Any, choices: Iterable[str]) -> str | None:
    """The choice ``word`` was most likely meant to be, if any is close enough.

    Examples
    --------
    >>> close_match("trials", ["trial_count", "random_seed"])
    'trial_count'
    >>> close_match("seed", ["trial_count", "random_seed"])
    'random_seed'
    >>> close_match("colour", ["trial_count"]) is None
    True
    """
    text = str(word).lower()
    choices = list(choices)
    alias = _ALIASES.get(text)
    if alias in choices:
        return alias
    # A cutoff below difflib's 0.6 still rejects unrelated words but catches shortened
    # names such as ``trials`` -> ``trial_count`` and ``seed`` -> ``random_seed``.
    matches = difflib.get_close_matches(text, choices, n=1, cutoff=0.5)
    if matches:
        return matches[0]
    prefixed = [c for c in choices if len(text) >= 3 and (c.startswith(text) or c.endswith(text))]
    return prefixed[0] if len(prefixed) == 1 else None
