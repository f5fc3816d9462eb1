"""Versions declared once: the AgenticLens releases this package reproduces, and its own.

Every place that stamps or checks a version of the reference implementation reads it from
here: the built-in checks' ``evaluator_version`` (agentic-evals' version, as the package
stamps it), the report's ``agenticlens_frames.implements`` block, and the differential
tests, which fail if the installed reference package is another version. ``VERSION`` is
this package's (``agenticlens_frames.__version__``), here so that the report writers below
the package's face can stamp it without importing ``__init__``.
"""

from __future__ import annotations

__all__ = ["AGENTICLENS_VERSION", "AGENTIC_EVALS_VERSION", "IMPLEMENTS", "VERSION"]

#: This package's version (as in pyproject.toml).
VERSION = "0.1.0"
#: The ``agenticlens`` release whose files, reports and CSVs we read and write.
AGENTICLENS_VERSION = "0.10.0"
#: The ``agentic-evals`` release it depends on (its scoring rules and built-in checks).
AGENTIC_EVALS_VERSION = "0.9.0"

IMPLEMENTS = {"agenticlens": AGENTICLENS_VERSION, "agentic-evals": AGENTIC_EVALS_VERSION}
