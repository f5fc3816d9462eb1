"""agenticlens_frames: run and analyse AI-agent experiments as tidy pandas/Arrow tables.

Reads and runs AgenticLens 0.10 experiments (manifest, suite, recorded targets) and keeps
every trial as tidy tables: ``attempts``, ``checks``, ``trials``, ``variants``, ``cases``.

Examples
--------
>>> import agenticlens_frames as alf
>>> run = alf.load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
>>> sorted(run.tables)
['attempts', 'cases', 'checks', 'trials', 'variants']
"""

from .errors import InputError
from .evaluators import Evaluator, EvaluatorRegistry, load_registry
from .formats import load_manifest, load_recorded, load_suite, normalize_trace
from .frames import ExperimentRun, read_parquet
from .loading import load_experiment
from .runner.order import execution_order

__version__ = "0.1.0"

__all__ = [
    "Evaluator",
    "EvaluatorRegistry",
    "ExperimentRun",
    "InputError",
    "__version__",
    "execution_order",
    "load_experiment",
    "load_manifest",
    "load_recorded",
    "load_registry",
    "load_suite",
    "normalize_trace",
    "read_parquet",
]
