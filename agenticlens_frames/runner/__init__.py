"""Running experiments: execution order, recorded replay (live targets come later)."""

from .order import execution_order
from .recorded import replay_recorded

__all__ = ["execution_order", "replay_recorded"]
