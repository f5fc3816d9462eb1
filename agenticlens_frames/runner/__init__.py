"""Running experiments: execution order, recorded replay, and live (python / http) targets."""

from .live import LiveRunResult, arun_live, run_experiment, run_live
from .order import execution_order
from .recorded import replay_recorded
from .retry import FAILURE_KINDS, RetryPolicy, parse_retry

__all__ = [
    "FAILURE_KINDS",
    "LiveRunResult",
    "RetryPolicy",
    "arun_live",
    "execution_order",
    "parse_retry",
    "replay_recorded",
    "run_experiment",
    "run_live",
]
