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

import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ._deprecate import class_keyword_hints, keyword_hints, renamed_keywords
from ._imports import import_nearby
from .errors import InputError
from .judges import Judged, JudgeRetryPolicy, JudgeRunner, SampleBook, normalize_judgement

if TYPE_CHECKING:
    from .formats.model import CaseSpec, EvaluatorRef
    from .formats.traces import Trace

__all__ = [
    "Evaluator",
    "EvaluatorFunction",
    "EvaluatorRegistry",
    "JudgeRetryPolicy",
    "RetryPolicy",
    "as_registry",
    "default_registry",
    "load_registry",
]

#: The judges' retry policy under the name the package (and spec §19) uses.
RetryPolicy = JudgeRetryPolicy

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


@class_keyword_hints(skip=("evaluate",))
@dataclass(frozen=True)
class Evaluator:
    """A registered evaluator: a name, a version of its logic, and the function.

    Plain evaluators get ``fn(output, case, trace, config)`` with the entry's inner
    ``config`` mapping; judges (``runner`` set, see :meth:`EvaluatorRegistry.register_judge`)
    get the case's whole evaluator entry (``name``, ``threshold``, ``required``,
    ``config``) and run under their retry policy and sample count.

    Examples
    --------
    >>> from agenticlens_frames import normalize_trace
    >>> from agenticlens_frames.formats.model import CaseSpec
    >>> registry = EvaluatorRegistry()
    >>> @registry.register("mentions", version="2")
    ... def mentions(output, case, trace, config):
    ...     return float(config["word"] in output.lower()), f"looked for {config['word']!r}"
    >>> evaluator = registry["mentions"]
    >>> evaluator.name, evaluator.version, evaluator.evaluator_type
    ('mentions', '2', 'custom')
    >>> evaluator("Refund issued", CaseSpec(id="c1", name="c", index=0), normalize_trace({}),
    ...           {"word": "refund"})
    (1.0, "looked for 'refund'")
    """

    name: str
    version: str | None
    function: EvaluatorFunction
    description: str = ""
    evaluator_type: str = "custom"
    runner: JudgeRunner | None = None

    def __call__(
        self, output: str, case: CaseSpec, trace: Trace, config: Mapping[str, Any]
    ) -> tuple[float, str]:
        """Run a plain evaluator and normalise its result to ``(value, explanation)``."""
        judged = self._plain(output, case, trace, config)
        return judged.value, judged.explanation

    def _plain(
        self, output: str, case: CaseSpec, trace: Trace, config: Mapping[str, Any]
    ) -> Judged:
        result = self.function(output, case, trace, config)
        if isinstance(result, tuple) and len(result) != 2:
            raise ValueError(
                f"evaluator {self.name!r} returned a tuple of {len(result)} items; "
                "return a value or (value, explanation)"
            )
        return normalize_judgement(result, evaluator=self.name, case_id=case.id, role="evaluator")

    def evaluate(
        self,
        output: str,
        case: CaseSpec,
        trace: Trace,
        ref: EvaluatorRef,
        *,
        book: SampleBook | None = None,
        entry: int = 0,
    ) -> list[Judged]:
        """The scores this evaluator gives one sample for one ``evaluators:`` entry.

        ``output`` is the raw (unstripped) output, as the package passes it. A plain
        evaluator's exception propagates; a judge's failed attempts become an
        unavailable score. ``book`` (live runs) journals a judge's samples and hands back
        those of entry number ``entry`` judged before a crash.

        Examples
        --------
        >>> from agenticlens_frames import normalize_trace
        >>> from agenticlens_frames.formats.model import CaseSpec, EvaluatorRef
        >>> registry = EvaluatorRegistry()
        >>> _ = registry.register("short", lambda output, case, trace, config: float(
        ...     len(output) <= config["max_chars"]), version="1")
        >>> ref = EvaluatorRef(name="short", threshold=1.0, config={"max_chars": 20})
        >>> [(j.name, j.value) for j in registry["short"].evaluate(
        ...     "Refund issued", CaseSpec(id="c1", name="c", index=0), normalize_trace({}), ref)]
        [('short', 1.0)]
        """
        if self.runner is None:
            return [self._plain(output, case, trace, ref.config)]
        config = MappingProxyType(
            {
                "name": ref.name,
                "threshold": ref.threshold,
                "required": ref.required,
                "config": ref.config,
            }
        )
        function = self.function
        return self.runner.run(
            lambda: function(output, case, trace, config),
            case.id,
            book=book,
            entry=entry,
            version=self.version,
        )


@class_keyword_hints(skip=("judges",))
class EvaluatorRegistry(Mapping[str, Evaluator]):
    """Name → :class:`Evaluator`. Behaves as a read-only mapping once filled.

    Fill it with :meth:`register` (plain evaluators) and :meth:`register_judge` (LLM
    judges); pass it to :func:`~agenticlens_frames.load_experiment` or the runner as
    ``evaluators``.

    Examples
    --------
    >>> registry = EvaluatorRegistry()
    >>> _ = registry.register("polite", lambda output, *rest: float("please" in output),
    ...                       version="1")
    >>> list(registry), len(registry), "polite" in registry
    (['polite'], 1, True)
    """

    def __init__(self) -> None:
        self._items: dict[str, Evaluator] = {}
        #: Cases of one recorded trial scored at once when the registry has judges (their
        #: calls overlap); live runs use the run's concurrency limit instead.
        self.judge_concurrency = 8

    @property
    def has_judges(self) -> bool:
        """Whether any registered evaluator is a judge (see :meth:`register_judge`).

        Examples
        --------
        >>> registry = EvaluatorRegistry()
        >>> _ = registry.register("polite", lambda *args: 1.0, version="1")
        >>> registry.has_judges
        False
        >>> _ = registry.register_judge("tone", lambda *args: 1.0, version="1")
        >>> registry.has_judges
        True
        """
        return any(e.runner is not None for e in self._items.values())

    def judges(self, case: CaseSpec) -> bool:
        """Whether one of ``case``'s ``evaluators:`` entries names a registered judge.

        Examples
        --------
        >>> from agenticlens_frames.formats.model import CaseSpec, EvaluatorRef
        >>> registry = EvaluatorRegistry()
        >>> _ = registry.register_judge("tone", lambda *args: 1.0, version="1")
        >>> registry.judges(CaseSpec(id="c1", name="c", index=0,
        ...                          evaluators=(EvaluatorRef(name="tone"),)))
        True
        >>> registry.judges(CaseSpec(id="c2", name="c", index=1))
        False
        """
        items = self._items
        return any(
            (found := items.get(ref.name)) is not None and found.runner is not None
            for ref in case.evaluators
        )

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
            ``fn(output, case, trace, config)`` returning a value in [0, 1],
            ``(value, explanation)`` or a judgement mapping (``value``,
            ``explanation``, ``metadata``…). ``output`` is the raw output. Omit
            ``function`` to use ``register`` as a decorator.
        version
            The version of the evaluator's logic; recorded with every score.
        description
            Free text kept on the registration (``registry[name].description``); not
            written to the results.
        replace
            Allow replacing an existing registration.

        Returns
        -------
        EvaluatorFunction or decorator
            ``function`` itself; without it, a decorator that registers and returns the
            function it decorates.

        Examples
        --------
        >>> registry = EvaluatorRegistry()
        >>> @registry.register("mentions_refund", version="1")
        ... def mentions_refund(output, case, trace, config):
        ...     return float("refund" in output.lower())
        >>> registry["mentions_refund"].version
        '1'
        >>> registry.register("blank", mentions_refund, version=" ")
        Traceback (most recent call last):
        ...
        agenticlens_frames.errors.InputError: version: evaluator 'blank' needs a non-empty
        version string (...)
        """
        if not isinstance(version, str) or not version.strip():
            # InputError is a ValueError: callers catching ValueError still do.
            raise InputError(
                f"evaluator {name!r} needs a non-empty version string",
                location="version",
                hint='pass version="1" (any label of the logic; it is recorded with each score)',
            )
        return self._add(name, function, version, description, replace, "custom", None)

    @renamed_keywords(fn="function")
    def register_judge(
        self,
        name: str,
        function: EvaluatorFunction | None = None,
        *,
        version: str | None = None,
        retry: JudgeRetryPolicy | None = None,
        samples: int = 1,
        evaluator_type: str = "llm_judge",
        description: str = "",
        replace: bool = False,
    ) -> Any:
        """Register an LLM judge under ``name``; usable as a decorator.

        Parameters
        ----------
        name
            The name suites use; also the name of the judge's *unavailable* scores.
        function
            ``function(output, case, trace, config)``, possibly ``async def``: ``output`` is the
            raw output and ``config`` the case's whole evaluator entry (``name``,
            ``threshold``, ``required``, ``config``). Returns a judgement mapping
            (``value`` in [0, 1]; optionally ``name``, ``metric``, ``explanation``,
            ``metadata`` with the ``judge_*`` keys, ``skipped``), a number, a
            ``(value, explanation)`` pair, or a list of judgements. It raises to signal a
            failed attempt; an exception with a ``usage`` mapping counts that call's usage.
            Omit it to use ``register_judge`` as a decorator. Formerly ``fn``, still
            accepted with a ``FutureWarning`` (``register`` calls it ``function``).
        version
            The version of the judge (prompt and model); ``None`` records no version.
        retry
            A :class:`JudgeRetryPolicy` (also importable as ``RetryPolicy`` from this
            module); default one attempt.
        samples
            Judge each evaluation this many times, one after another, and aggregate.
        evaluator_type
            ``"llm_judge"`` (default) or ``"llm_rubric"``: both count in ``summary.judge``.
        description
            Free text kept on the registration (``registry[name].description``); not
            written to the results.
        replace
            Allow replacing an existing registration.

        Returns
        -------
        EvaluatorFunction or decorator
            ``function`` itself; without it, a decorator that registers and returns the
            function it decorates.

        Examples
        --------
        >>> registry = EvaluatorRegistry()
        >>> @registry.register_judge("helpfulness", version="gpt-x/prompt-3", samples=3)
        ... def helpful(output, case, trace, config):
        ...     return {"value": 1.0, "explanation": "answers the question",
        ...             "metadata": {"verdict": "good", "judge_latency_ms": 20.0}}
        >>> registry["helpfulness"].evaluator_type
        'llm_judge'
        """
        if version is not None and (not isinstance(version, str) or not version.strip()):
            raise InputError(  # a ValueError, as before
                f"evaluator {name!r}: version must not be blank",
                location="version",
                hint="pass a label of the judge's prompt and model, or None for no version",
            )
        runner = JudgeRunner(name, retry=retry, samples=samples)
        return self._add(name, function, version, description, replace, evaluator_type, runner)

    def _add(
        self,
        name: str,
        function: EvaluatorFunction | None,
        version: str | None,
        description: str,
        replace: bool,
        evaluator_type: str,
        runner: JudgeRunner | None,
    ) -> Any:
        if not name or not isinstance(name, str):
            raise ValueError("evaluator name must be a non-empty string")

        def add(fn: EvaluatorFunction) -> EvaluatorFunction:
            if not callable(fn):
                raise TypeError(f"evaluator {name!r} must be callable")
            if name in self._items and not replace:
                raise ValueError(f"evaluator {name!r} is already registered")
            self._items[name] = Evaluator(name, version, fn, description, evaluator_type, runner)
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
        names = ", ".join(f"{n}@{self._items[n].version or 'unversioned'}" for n in self)
        return f"EvaluatorRegistry([{names}])"


def as_registry(evaluators: EvaluatorRegistry | str | None) -> EvaluatorRegistry:
    """The registry the Python entry points take: a registry, a ``module:attr`` spec as the
    command line's ``--evaluators`` (:func:`load_registry`), or None for an empty one.

    Anything else is refused: a string was iterated as a registry of one-character names.

    Examples
    --------
    >>> len(as_registry(None)), as_registry(EvaluatorRegistry()) is not None
    (0, True)
    >>> try:
    ...     as_registry(["exact_match"])
    ... except InputError as exc:
    ...     print(exc.message)
    expected an EvaluatorRegistry or a 'module:attr' string, got list
    """
    if evaluators is None:
        return EvaluatorRegistry()
    if isinstance(evaluators, EvaluatorRegistry):
        return evaluators
    if isinstance(evaluators, str):
        return load_registry(evaluators)
    raise InputError(
        f"expected an EvaluatorRegistry or a 'module:attr' string, got {type(evaluators).__name__}",
        location="evaluators",
        hint="see agenticlens_frames.default_registry",
    )


@keyword_hints
def load_registry(spec: str, *, location: str = "evaluators") -> EvaluatorRegistry:
    """Import ``module:attr`` and return the :class:`EvaluatorRegistry` it names.

    Used by the CLI's ``--evaluators`` option and the ``evaluators=`` argument of the
    Python entry points. The attribute may also be a function that returns a registry.
    ``location`` is the name errors give the spec (``"--evaluators"`` on the command
    line: a notebook's ``evaluators=`` was reported as the command line's option).

    Examples
    --------
    >>> load_registry("nonexistent_module_xyz:registry")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: evaluators: cannot import module ...
    >>> load_registry("registry", location="--evaluators")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: --evaluators: expected 'module:attribute', got \
'registry' (e.g. --evaluators my_project.evals:registry)
    """
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise InputError(
            f"expected 'module:attribute', got {spec!r}",
            location=location,
            hint=f"e.g. {location} my_project.evals:registry"
            if location.startswith("--")
            else f"e.g. {location}='my_project.evals:registry'",
        )
    try:
        # The working directory too: the console script does not put it on sys.path, and
        # `--evaluators my_project.evals:registry` is run from beside my_project/.
        module = import_nearby(module_name, (Path.cwd(),))
    except ImportError as exc:
        raise InputError(
            f"cannot import module {module_name!r} ({exc})",
            location=location,
            hint="make sure the module is on PYTHONPATH or in the working directory",
        ) from exc
    except BaseException as exc:
        raise InputError(
            f"importing module {module_name!r} failed: {type(exc).__name__}: {exc}",
            location=location,
        ) from None
    try:
        value = getattr(module, attr)
    except AttributeError as exc:
        raise InputError(
            f"module {module_name!r} has no attribute {attr!r}", location=location
        ) from exc
    if not isinstance(value, EvaluatorRegistry):
        value = _call_factory(spec, value, location)
    if not isinstance(value, EvaluatorRegistry):
        raise InputError(
            f"{spec} is a {type(value).__name__}, not an EvaluatorRegistry",
            location=location,
        )
    return value


@keyword_hints
def default_registry(*, embed_fn: Callable[[str], Any] | None = None) -> EvaluatorRegistry:
    """A fresh registry holding the package's default scorers (spec §16).

    The reference scorers (``levenshtein_similarity``, ``embedding_similarity``,
    ``json_diff``, ``numeric_diff``, ``starts_with``, ``ends_with``) and the text checks
    (``exact_match``, ``contains_all``, ``contains_any``, ``valid_json``, ``regex_match``,
    ``numeric_range``), with AgenticLens' formulas and explanations; ``evaluator_type``
    "builtin" and no version, as the package records them. Add your own evaluators and
    judges to it, and name it with ``--evaluators module:attr``.

    ``embed_fn`` (text → vector) makes ``embedding_similarity`` usable from suite files:
    the package only takes it from a case's config, which YAML cannot hold (J12). A case's
    own ``config.embed_fn`` still wins.

    Examples
    --------
    >>> registry = default_registry()
    >>> "levenshtein_similarity" in registry, registry["json_diff"].evaluator_type
    (True, 'builtin')
    """
    from .reference_scorers import SCORERS

    registry = EvaluatorRegistry()
    for name, scorer in SCORERS.items():
        function = scorer
        if name == "embedding_similarity" and embed_fn is not None:

            def function(output, case, trace, config, _scorer=scorer):  # type: ignore[no-untyped-def]
                return _scorer(output, case, trace, {"embed_fn": embed_fn, **config})

        registry._add(name, function, None, scorer.__doc__ or "", False, "builtin", None)
    return registry


def _call_factory(spec: str, value: Any, location: str) -> Any:
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
            location=location,
        )
    try:
        return value()
    except BaseException as exc:
        raise InputError(
            f"{spec}() failed: {type(exc).__name__}: {exc}", location=location
        ) from None
