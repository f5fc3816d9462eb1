"""Loading and validating AgenticLens 0.10 files: manifests, suites, recorded trials, traces.

Every loader returns the frozen dataclasses of :mod:`agenticlens_frames.formats.model` and
raises :class:`~agenticlens_frames.errors.InputError` (file, place, fix) on bad input.
"""

from agenticlens_frames.formats._io import read_document
from agenticlens_frames.formats.manifest import load_manifest
from agenticlens_frames.formats.model import (
    CaseSpec,
    EvaluatorRef,
    ManifestSpec,
    RecordedTrials,
    SuiteSpec,
    VariantSpec,
)
from agenticlens_frames.formats.recorded import load_recorded
from agenticlens_frames.formats.suite import JSON_SCHEMA_DIALECT, load_suite
from agenticlens_frames.formats.traces import COST_SOURCES, Trace, is_run_shaped, normalize_trace

__all__ = [
    "COST_SOURCES",
    "JSON_SCHEMA_DIALECT",
    "CaseSpec",
    "EvaluatorRef",
    "ManifestSpec",
    "RecordedTrials",
    "SuiteSpec",
    "Trace",
    "VariantSpec",
    "is_run_shaped",
    "load_manifest",
    "load_recorded",
    "load_suite",
    "normalize_trace",
    "read_document",
]
