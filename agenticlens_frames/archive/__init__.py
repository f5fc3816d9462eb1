"""Trial archives: many experiment runs as partitioned parquet, sliced and analysed at scale.

>>> import tempfile
>>> from agenticlens_frames import load_experiment
>>> from agenticlens_frames.archive import Archive
>>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
>>> archive = Archive(tempfile.mkdtemp())
>>> archive.add(run, run_at="2026-11-04").added
True
>>> dense = archive.slice(retrieval="dense", tags="refund", since="2026-10-01")
>>> dense.analyze(engine="numpy").variant_summary["variant_id"].astype(str).tolist()
['retrieval-dense']

See docs/archives.md.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .catalog import RunRecord
    from .engines import ENGINES, sufficient_stats
    from .query import ArchiveSlice, SliceFilter
    from .results import ArchiveAnalysis, analyze_stats
    from .store import AddResult, Archive, run_content_id
    from .sufficient import RunLayout, SufficientStats

# Imported on first use: the command line mounts ``archive`` without loading its engines.
_LAZY = {
    "ENGINES": ".engines",
    "RunLayout": ".sufficient",
    "SufficientStats": ".sufficient",
    "sufficient_stats": ".engines",
    "ArchiveSlice": ".query",
    "SliceFilter": ".query",
    "ArchiveAnalysis": ".results",
    "analyze_stats": ".results",
    "AddResult": ".store",
    "Archive": ".store",
    "RunRecord": ".catalog",
    "run_content_id": ".store",
}


#: ``__all__`` is every name of ``_LAZY`` (the one list of public names).
__getattr__, __dir__, __all__ = lazy_exports(__name__, _LAZY, globals())
