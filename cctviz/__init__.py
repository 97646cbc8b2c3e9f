"""cctviz: calling-context trees of (distributed) profiles, in Jupyter.

>>> import cctviz
>>> t = cctviz.Tree.from_parents([-1, 0], ["main", "solve"], {"time": [1.0, 2.0]})
>>> t.query('MATCH (".", a) WHERE a."name" = "solve"').names.tolist()
['solve']
"""

from .dataset import DatasetEnsemble, open_dataset
from .errors import (
    CCTVizError,
    FigureFitWarning,
    ProfileError,
    QueryError,
    UnknownFormatError,
    WorkerError,
)
from .interop import from_hatchet, from_thicket
from .model import Ensemble, NodeSet, Tree
from .model.timeline import Timeline
from .ops.diff import diff, diff_table
from .readers import read, read_ensemble, read_timeline
from .writers import write

__version__ = "0.2.0"


def __getattr__(name: str):
    # views import anywidget and read the built front-end bundle: load on first use
    if name in ("profile", "Profiler", "region", "moved"):
        from .runtime import profiler

        return getattr(profiler, name)
    if name == "CCTView":
        from .views.cct import CCTView

        return CCTView
    if name == "SankeyView":
        from .views.sankey import SankeyView

        return SankeyView
    if name == "ProfilesView":
        from .views.profiles import ProfilesView

        return ProfilesView
    if name == "TimelineView":
        from .views.timeline import TimelineView

        return TimelineView
    if name in ("watch", "Watch"):
        from . import live

        return getattr(live, name)
    if name in ("perfmodel", "workflow", "examples", "live"):  # submodules (`from .` asks here)
        import importlib

        return importlib.import_module(f".{name}", __name__)
    if name in ("link", "Link"):
        from .views import linking

        return getattr(linking, name)
    raise AttributeError(f"module 'cctviz' has no attribute {name!r}")


__all__ = [
    "Tree",
    "Ensemble",
    "NodeSet",
    "CCTView",
    "SankeyView",
    "ProfilesView",
    "TimelineView",
    "link",
    "Link",
    "read",
    "read_ensemble",
    "read_timeline",
    "open_dataset",
    "DatasetEnsemble",
    "Timeline",
    "profile",
    "Profiler",
    "region",
    "moved",
    "watch",
    "Watch",
    "write",
    "diff",
    "diff_table",
    "from_hatchet",
    "from_thicket",
    "FigureFitWarning",
    "ProfileError",
    "QueryError",
    "UnknownFormatError",
    "WorkerError",
    "CCTVizError",
]
