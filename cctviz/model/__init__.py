"""Data structures: Tree, Ensemble, NodeSet. No I/O, no UI."""

from .ensemble import Ensemble
from .nodeset import NodeSet
from .tree import Tree

__all__ = ["Tree", "Ensemble", "NodeSet"]
