"""Renamed keyword arguments, kept working for one deprecation period.

The one helper for "this parameter has a new name": the old keyword still works, with a
:class:`FutureWarning` (pandas' category for deprecations users should act on) naming the
new one; giving both is a :class:`TypeError`, as giving one argument twice is. Positional
calls are untouched, and :func:`inspect.signature` (through ``__wrapped__``) shows only
the new names. The warning points at the first caller outside this package (as pandas'
``find_stack_level`` does), so ``as_analysis(run, frontier_resamples=0)`` names the user's
line, not the package's forwarding call.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import os
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import ParamSpec, TypeVar

from ._choices import COMPARISONS_KEYS

__all__ = [
    "class_keyword_hints",
    "keyword_hints",
    "renamed_from",
    "renamed_keywords",
    "unexpected_keyword",
]

P = ParamSpec("P")
R = TypeVar("R")

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _stack_level() -> int:
    """The ``stacklevel`` of the first frame outside the package, for ``warnings.warn``
    called by the frame that calls this."""
    frame = inspect.currentframe()
    level = 0  # 1 would be the caller of this function; counted from there below
    try:
        while frame is not None:
            name = os.path.abspath(frame.f_code.co_filename)
            if level > 0 and not name.startswith(_PACKAGE_DIR + os.sep):
                return level
            frame = frame.f_back
            level += 1
        return max(level - 1, 1)
    finally:
        del frame


def renamed_keywords(**renames: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a function so that each ``old=new`` keyword in ``renames`` still works.

    Parameters
    ----------
    **renames
        Old keyword name → new parameter name (which the function must have).

    Returns
    -------
    Callable
        A decorator; the function it returns maps an old keyword to the new one with a
        ``FutureWarning`` ("`old` is deprecated, use `new`") and raises ``TypeError`` when
        a call gives both.

    Examples
    --------
    >>> import warnings
    >>> @renamed_keywords(ks="pass_k")
    ... def f(pass_k=None):
    ...     return pass_k
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     f(ks=[1, 2])
    [1, 2]
    >>> print(caught[0].category.__name__, caught[0].message)
    FutureWarning f(): `ks` is deprecated, use `pass_k` (the old name will be removed in a
    future release)
    >>> f(ks=[1], pass_k=[2])
    Traceback (most recent call last):
    ...
    TypeError: f(): got both `ks` (deprecated) and `pass_k`; pass only `pass_k`
    >>> f(pas_k=[1])
    Traceback (most recent call last):
    ...
    TypeError: f() got an unexpected keyword argument 'pas_k'; did you mean 'pass_k'?
    """

    def decorate(func: Callable[P, R]) -> Callable[P, R]:
        name = getattr(func, "__qualname__", getattr(func, "__name__", "function"))

        @functools.wraps(func)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            if renames and not renames.keys().isdisjoint(kwargs):
                _rename(name, renames, kwargs)
            try:
                return func(*args, **kwargs)
            except TypeError as exc:
                # Only a call that failed to bind (no frame of ``func`` in the traceback)
                # gets the hint: the signature is read then, not at every call or import.
                if kwargs and exc.__traceback__ is not None and exc.__traceback__.tb_next is None:
                    shown = getattr(wrapper, "__keyword_hint_name__", name)
                    message = _unknown_keyword(func, shown, kwargs)
                    if message is not None:
                        raise TypeError(message) from None
                raise

        wrapper.__renamed_keywords__ = dict(renames)  # type: ignore[attr-defined]
        return wrapper

    return decorate


def keyword_hints(func: Callable[P, R]) -> Callable[P, R]:
    """Decorate a public function so that a misspelt keyword gets the closest one it takes.

    Python 3.11 says only "unexpected keyword argument 'corection'"; this says which
    keyword was meant (:func:`renamed_keywords` without renames). Nothing is checked
    before the call: the signature is read only when a call fails to bind, so a call
    costs one more Python frame (0.15-0.35 µs measured), and functions called once per row are
    left undecorated (their internal callers use ``__wrapped__``, the function itself).

    Examples
    --------
    >>> @keyword_hints
    ... def plot(frame=None, *, case_order="suite"):
    ...     return case_order
    >>> plot(case_ordr="flaky")
    Traceback (most recent call last):
    ...
    TypeError: plot() got an unexpected keyword argument 'case_ordr'; did you mean 'case_order'?
    >>> plot(case_order="flaky")
    'flaky'
    """
    return renamed_keywords()(func)


T = TypeVar("T", bound=type)


def class_keyword_hints(*, skip: Collection[str] = ()) -> Callable[[T], T]:
    """Decorate a public class so that its constructor and its public methods that take
    keywords get :func:`keyword_hints` (put it above ``@dataclass``, which makes the
    constructor first). ``skip``: methods called once per row, left as they are.

    ``ComparisonsConfig(corection="holm")`` said only "__init__() got an unexpected
    keyword argument 'corection'".

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> @class_keyword_hints()
    ... @dataclass
    ... class Settings:
    ...     correction: str = "holm"
    >>> Settings(corection="none")
    Traceback (most recent call last):
    ...
    TypeError: Settings() got an unexpected keyword argument 'corection'; did you mean \
'correction'?
    """

    def decorate(cls: T) -> T:
        for attr, value in list(vars(cls).items()):
            if (attr.startswith("_") and attr != "__init__") or attr in skip:
                continue
            kind = type(value) if isinstance(value, (classmethod, staticmethod)) else None
            func = value.__func__ if kind is not None else value
            if not inspect.isfunction(func) or hasattr(func, "__renamed_keywords__"):
                continue
            wrapped = renamed_keywords()(func)
            if attr == "__init__":  # said as the call the user wrote: Settings(...)
                wrapped.__keyword_hint_name__ = cls.__qualname__  # type: ignore[attr-defined]
            setattr(cls, attr, kind(wrapped) if kind is not None else wrapped)
        # Read by the test that tries every public keyword: these are left out on purpose.
        cls.__keyword_hints_skip__ = tuple(skip)  # type: ignore[attr-defined]
        return cls

    return decorate


def _rename(name: str, renames: Mapping[str, str], kwargs: dict[str, object]) -> None:
    """Move each old keyword of ``kwargs`` to its new name, warning; refuse both given."""
    for old, new in renames.items():
        if old not in kwargs:
            continue
        if new in kwargs:
            raise TypeError(
                f"{name}(): got both `{old}` (deprecated) and `{new}`; pass only `{new}`"
            )
        warnings.warn(
            f"{name}(): `{old}` is deprecated, use `{new}` (the old name will be "
            "removed in a future release)",
            FutureWarning,
            stacklevel=_stack_level(),
        )
        kwargs[new] = kwargs.pop(old)


def _unknown_keyword(
    func: Callable[..., object], name: str, kwargs: Mapping[str, object]
) -> str | None:
    """The hinted message for the first keyword of ``kwargs`` that ``func`` does not take,
    or None when it takes them all (the TypeError was another binding error)."""
    try:
        parameters = inspect.signature(func).parameters
    except (TypeError, ValueError):  # no signature to read: leave Python's message
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return None
    for key in kwargs:
        if key not in parameters or parameters[key].kind is inspect.Parameter.POSITIONAL_ONLY:
            return _unexpected(name, key, parameters)
    return None


def _unexpected(name: str, key: str, parameters: Mapping[str, inspect.Parameter]) -> str:
    """Python's message for a keyword ``name`` does not take, with the closest keyword it
    does take (Python 3.11 names none: ``analyze(run, corection="holm")`` said only
    "unexpected keyword argument 'corection'")."""
    keywords = [
        k
        for k, p in parameters.items()
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        and k not in ("self", "cls")  # a method's own, never passed by name
    ]
    return unexpected_keyword(name, key, keywords)


def unexpected_keyword(name: str, key: str, keywords: Sequence[str]) -> str:
    """The message for a keyword ``key`` that function ``name`` does not take, with the
    closest of ``keywords`` (those it takes), for a function that checks its ``**options``
    itself.

    Examples
    --------
    >>> unexpected_keyword("draw", "in_pag", ["in_page", "max_cases"])
    "draw() got an unexpected keyword argument 'in_pag'; did you mean 'in_page'?"
    """
    text = f"{name}() got an unexpected keyword argument {key!r}"
    match = difflib.get_close_matches(key, keywords, n=1, cutoff=0.6)
    if match:
        return f"{text}; did you mean {match[0]!r}?"
    if "comparisons" in keywords and key in COMPARISONS_KEYS:
        # analyze(run, alpha=0.05): the paired settings other than correction are a mapping.
        return (
            f"{text}; paired-comparison settings other than correction go in one mapping: "
            f"comparisons={{{key!r}: ...}}"
        )
    return f"{text}; it takes {', '.join(keywords)}"


def renamed_from(func: Callable[..., object]) -> dict[str, str]:
    """The old keyword → new name map :func:`renamed_keywords` gave ``func`` (empty if none).

    For code that checks keywords against a signature before passing them on (the
    statistics options of ``coerce.as_analysis``): an old name must still get through.

    Examples
    --------
    >>> @renamed_keywords(ks="pass_k")
    ... def f(pass_k=None):
    ...     return pass_k
    >>> renamed_from(f), renamed_from(print)
    ({'ks': 'pass_k'}, {})
    """
    return dict(getattr(func, "__renamed_keywords__", {}))
