"""Running experiments: execution order, recorded replay, and live (python / http) targets."""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .live import LiveRunResult, arun_live, run_experiment, run_live
    from .order import execution_order
    from .recorded import replay_recorded
    from .retry import FAILURE_KINDS, RetryPolicy, parse_retry

# Imported on first use: the supervising parent of ``experiment run`` reads only
# runner.inflight, and must not load pandas and the live runner for that.
_LAZY = {
    "LiveRunResult": ".live",
    "arun_live": ".live",
    "run_experiment": ".live",
    "run_live": ".live",
    "execution_order": ".order",
    "replay_recorded": ".recorded",
    "FAILURE_KINDS": ".retry",
    "RetryPolicy": ".retry",
    "parse_retry": ".retry",
}

#: ``__all__`` is every name of ``_LAZY`` (the one list of public names).
__getattr__, __dir__, __all__ = lazy_exports(__name__, _LAZY, globals())
