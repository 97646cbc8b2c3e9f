"""Data structures: Tree, Ensemble, NodeSet. No I/O, no UI.

Beside them, pure vocabulary that the layers above share and nothing below
them may own: :mod:`.collectives` (collective kinds, dtype sizes, bus
factors) and :mod:`.formats` (the names and rules of cctviz's own files).
"""

from .ensemble import Ensemble
from .nodeset import NodeSet
from .tree import Tree

__all__ = ["Tree", "Ensemble", "NodeSet"]
