"""A registry of trusted Python evaluators that suites may name.

Suite files never import or execute code: a case lists evaluators by name
(``evaluators: [{name: polite_tone, threshold: 0.8}]``) and the code behind each name is
registered here, in Python, by the user. The threshold and ``required`` flag come from the
suite; the version comes from the registration and is recorded with every score.

Examples
--------
>>> registry = EvaluatorRegistry()
>>> @registry.register("mentions_order", version="1")
... def mentions_order(output, case, trace, config):
...     found = "order" in output.lower()
...     return (1.0 if found else 0.0), ("mentions the order" if found else "no order")
>>> "mentions_order" in registry
True
>>> registry.get("mentions_order").version
'1'
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import InputError

if TYPE_CHECKING:
    from .formats.model import CaseSpec
    from .formats.traces import Trace

__all__ = ["Evaluator", "EvaluatorFunction", "EvaluatorRegistry", "load_registry"]

#: ``fn(output, case, trace, config) -> value`` or ``(value, explanation)``; value in [0, 1].
EvaluatorFunction = Callable[["str", "CaseSpec", "Trace", Mapping[str, Any]], Any]

#: Scorers that, in AgenticLens, grade against ``expected_output`` themselves when their
#: config has no ``reference``; the implicit exact-match check is then skipped (spec §6 #1).
REFERENCE_SCORER_NAMES = frozenset(
    {
        "levenshtein_similarity",
        "embedding_similarity",
        "json_diff",
        "numeric_diff",
        "starts_with",
        "ends_with",
    }
)


@dataclass(frozen=True)
class Evaluator:
    """A registered evaluator: a name, a version of its logic, and the function."""

    name: str
    version: str
    function: EvaluatorFunction
    description: str = ""
    evaluator_type: str = "custom"

    def __call__(
        self, output: str, case: CaseSpec, trace: Trace, config: Mapping[str, Any]
    ) -> tuple[float, str]:
        """Run the evaluator and normalise its result to ``(value, explanation)``."""
        result = self.function(output, case, trace, config)
        if isinstance(result, tuple):
            if len(result) != 2:
                raise ValueError(
                    f"evaluator {self.name!r} returned a tuple of {len(result)} items; "
                    "return a value or (value, explanation)"
                )
            value, explanation = result
        else:
            value, explanation = result, ""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(
                f"evaluator {self.name!r} returned {type(value).__name__}; expected a number"
            )
        value = float(value)
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"evaluator {self.name!r} returned {value}, outside [0, 1]")
        return value, str(explanation)


class EvaluatorRegistry(Mapping[str, Evaluator]):
    """Name → :class:`Evaluator`. Behaves as a read-only mapping once filled."""

    def __init__(self) -> None:
        self._items: dict[str, Evaluator] = {}

    def register(
        self,
        name: str,
        function: EvaluatorFunction | None = None,
        *,
        version: str,
        description: str = "",
        replace: bool = False,
    ) -> Any:
        """Register ``function`` under ``name``; usable as a decorator.

        Parameters
        ----------
        name
            The name suites use (``evaluators: [{name: ...}]``).
        function
            ``fn(output, case, trace, config)`` returning a value in [0, 1] or
            ``(value, explanation)``. Omit it to use ``register`` as a decorator.
        version
            The version of the evaluator's logic; recorded with every score.
        replace
            Allow replacing an existing registration.
        """
        if not name or not isinstance(name, str):
            raise ValueError("evaluator name must be a non-empty string")
        if not isinstance(version, str) or not version.strip():
            raise ValueError(f"evaluator {name!r} needs a non-empty version string")

        def add(fn: EvaluatorFunction) -> EvaluatorFunction:
            if not callable(fn):
                raise TypeError(f"evaluator {name!r} must be callable")
            if name in self._items and not replace:
                raise ValueError(f"evaluator {name!r} is already registered")
            self._items[name] = Evaluator(name, version, fn, description)
            return fn

        if function is None:
            return add
        add(function)
        return function

    def __getitem__(self, name: str) -> Evaluator:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        names = ", ".join(f"{n}@{self._items[n].version}" for n in self)
        return f"EvaluatorRegistry([{names}])"


def load_registry(spec: str) -> EvaluatorRegistry:
    """Import ``module:attr`` and return the :class:`EvaluatorRegistry` it names.

    Used by the CLI's ``--evaluators`` option. The attribute may also be a function that
    returns a registry.

    Examples
    --------
    >>> load_registry("nonexistent_module_xyz:registry")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: --evaluators: cannot import module ...
    """
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise InputError(
            f"expected 'module:attribute', got {spec!r}",
            location="--evaluators",
            hint="e.g. --evaluators my_project.evals:registry",
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InputError(
            f"cannot import module {module_name!r} ({exc})",
            location="--evaluators",
            hint="make sure the module is on PYTHONPATH",
        ) from exc
    except BaseException as exc:
        raise InputError(
            f"importing module {module_name!r} failed: {type(exc).__name__}: {exc}",
            location="--evaluators",
        ) from None
    try:
        value = getattr(module, attr)
    except AttributeError as exc:
        raise InputError(
            f"module {module_name!r} has no attribute {attr!r}", location="--evaluators"
        ) from exc
    if not isinstance(value, EvaluatorRegistry):
        value = _call_factory(spec, value)
    if not isinstance(value, EvaluatorRegistry):
        raise InputError(
            f"{spec} is a {type(value).__name__}, not an EvaluatorRegistry",
            location="--evaluators",
        )
    return value


def _call_factory(spec: str, value: Any) -> Any:
    """Call a registry factory: a Python function taking no argument, and nothing else.

    ``--evaluators os:system`` must not call ``os.system()``: builtins, classes and
    functions that need arguments are refused before being called.
    """
    if not inspect.isfunction(value):
        return value  # refused by the caller as "not an EvaluatorRegistry"
    required = [
        p
        for p in inspect.signature(value).parameters.values()
        if p.default is inspect.Parameter.empty
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]
    if required:
        raise InputError(
            f"{spec} is a function that needs arguments, not an EvaluatorRegistry or a "
            "function returning one",
            location="--evaluators",
        )
    try:
        return value()
    except BaseException as exc:
        raise InputError(
            f"{spec}() failed: {type(exc).__name__}: {exc}", location="--evaluators"
        ) from None
