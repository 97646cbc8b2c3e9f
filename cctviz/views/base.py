"""What every view is built on: one base widget, the checks of the traits views
share, binary buffers, and the registry of view kinds.

A view is one module here (a :class:`View` subclass registered with
:func:`register_view`), one ``js/<kind>/`` folder and its line in the front end's
registry (``js/kit/registry.js``); see docs/architecture.md, section 7.

Example:
    >>> import numpy as np
    >>> profile_ids([3, 1, 1], 4)
    [1, 3]
    >>> bytes(f32(np.array([1.0])))
    b'\\x00\\x00\\x80?'
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Iterable
from typing import Any

import anywidget
import numpy as np
import traitlets

from ..model.nodeset import NodeSet
from .figure import SavesFigure
from .kinds import BUILT_IN_VIEWS

STATIC = pathlib.Path(__file__).resolve().parent.parent / "static"

#: the imbalance cue marks a node whose imbalance costs (max - mean over the
#: profiles) at least this share of the whole tree's mean value: 1% of the
#: whole. Every view that cues imbalance uses it.
CUE_SHARE = 0.01

#: view kind (the ``_kind`` trait, the export payload's ``kind``) -> its class,
#: filled as view modules are imported (see :func:`view_kinds`)
VIEW_KINDS: dict[str, type] = {}


def static(name: str) -> pathlib.Path:
    """A file of the built front end (``cctviz/static``), with a clear error if missing."""
    path = STATIC / name
    if not path.exists():
        raise FileNotFoundError(
            f"{path} is missing: the front-end bundle is built by `pip install -e .` "
            "or `npm run build` in the repository"
        )
    return path


def f32(a: np.ndarray) -> memoryview:
    """A float32 binary buffer (little-endian) of ``a``, as the front end reads it."""
    return memoryview(np.ascontiguousarray(a, dtype="<f4"))


def i32(a: np.ndarray) -> memoryview:
    """An int32 binary buffer (little-endian) of ``a``."""
    return memoryview(np.ascontiguousarray(a, dtype="<i4"))


def ids_json(value: Any, widget: Any) -> list[int]:
    """A node selection (a NodeSet or ids) as the JSON list the front end gets."""
    if value is None:
        return []
    return value.ids.tolist() if isinstance(value, NodeSet) else list(value)


def profile_ids(value: Any, n_profiles: int | None, what: str = "selected_profiles") -> list[int]:
    """The one check of a set of profile ids: an id or ids -> sorted unique ids in
    ``[0, n_profiles)``; ``n_profiles`` None means the view has no profiles.

    Raises:
        traitlets.TraitError: an id out of range, or ids for a view of one tree.
    """
    if isinstance(value, (int, np.integer)):
        value = [value]
    ids = np.unique(np.asarray(list(value if value is not None else []), dtype=np.int64))
    if ids.size and n_profiles is None:
        raise traitlets.TraitError(f"{what}: a Tree has no profiles to select")
    if ids.size and (ids[0] < 0 or ids[-1] >= n_profiles):
        raise traitlets.TraitError(f"{what}: profile ids must be in [0, {n_profiles})")
    return ids.tolist()


def node_ids(value: Any, tree: Any, what: str = "selection") -> np.ndarray:
    """The one check of a set of nodes of ``tree``: None (none), a query string,
    a NodeSet (of any tree: its nodes matched by call path), an id or ids ->
    sorted unique ids in ``[0, len(tree))``.

    Raises:
        traitlets.TraitError: an id out of range.
    """
    if value is None:
        return np.empty(0, dtype=np.int64)
    if isinstance(value, str):
        return tree.query(value).ids
    if isinstance(value, NodeSet):
        return value.on(tree).ids  # another tree's nodes: matched by identity
    if isinstance(value, (int, np.integer)):
        value = [value]
    ids = np.unique(np.asarray(list(value), dtype=np.int64))
    if ids.size and (ids[0] < 0 or ids[-1] >= len(tree)):
        raise traitlets.TraitError(f"{what}: node ids must be in [0, {len(tree)})")
    return ids


class NodeSelection(traitlets.Any):
    """The trait of a view's selected nodes: whatever :func:`node_ids` takes,
    held as a :class:`~cctviz.model.nodeset.NodeSet` of the view's ``tree`` and
    synced to the front end as ids. Every view declares ``selection =
    NodeSelection()``, so a selection is given and checked the same way in each.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(None, allow_none=True, **kwargs)
        self.tag(sync=True, to_json=ids_json)

    def validate(self, obj: Any, value: Any) -> NodeSet:
        return NodeSet(obj.tree, node_ids(value, obj.tree, self.name))


class ProfileIds(traitlets.List):
    """The trait of a view's selected profiles (ranks, runs): any id or ids given
    become the sorted unique ids, checked by :func:`profile_ids` against the view's
    ``profile_count`` (None: a view of one Tree, which has no profiles to select).
    Every view declares ``selected_profiles = ProfileIds()``, so a selection means
    the same in each.

    >>> import traitlets
    >>> class V(traitlets.HasTraits):
    ...     profile_count = 4
    ...     selected_profiles = ProfileIds()
    >>> V(selected_profiles=[3, 1, 3]).selected_profiles
    [1, 3]
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(traitlets.Int(), **kwargs)
        self.tag(sync=True)

    def validate(self, obj: Any, value: Any) -> list[int]:
        return profile_ids(value, obj.profile_count)


def data_argument(view: str, old: str, data: Any, kwargs: dict[str, Any]) -> Any:
    """The data a view is given: every view takes it as its first argument,
    ``data``; the view's old keyword for it (``ensemble=``, ``timeline=``) still
    works, with a DeprecationWarning, until 0.3.0."""
    if old not in kwargs:
        return data
    import warnings

    if data is not None:
        raise TypeError(f"{view}: give the data once, as data= (not also {old}=)")
    warnings.warn(
        f"{view}({old}=...) is renamed {view}(data=...); the old name is removed in 0.3.0",
        DeprecationWarning,
        stacklevel=3,
    )
    return kwargs.pop(old)


def share_space(widget: Any) -> None:
    """Views side by side in an ``HBox`` share its width (each would otherwise
    keep its content's width and squeeze the next one to a sliver); a layout
    the user gave wins."""
    if not widget.layout.flex:
        widget.layout.flex = "1 1 0%"
    if not widget.layout.min_width:
        widget.layout.min_width = "0"


class View(SavesFigure, anywidget.AnyWidget):
    """The base of every view: the front-end bundle, its kind, ``save()``, a share
    of an HBox's width. A subclass is registered with :func:`register_view`.

    :attr:`state` is the view's whole state as plain values (what ``save()``
    exports and what restoring a view takes back); a subclass lists its state
    traits in ``STATE``.
    """

    _esm = static("cctviz.js")
    _css = static("cctviz.css")
    _kind = traitlets.Unicode("").tag(sync=True)

    #: the traits that are the view's state (saved, exported, restored)
    STATE: tuple[str, ...] = ()

    @property
    def shown(self) -> Any:
        """The Tree or Ensemble the view shows (a subclass says which)."""
        raise NotImplementedError

    @property
    def data(self) -> Any:
        """Deprecated name of :attr:`shown`."""
        import warnings

        warnings.warn(
            f"{type(self).__name__}.data is renamed .shown; the old name is removed in 0.3.0",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.shown

    @property
    def kind(self) -> str:
        """The view's kind: its registry key, and the export payload's ``kind``."""
        return self._kind

    @property
    def state(self) -> dict[str, Any]:
        """The view's state as plain JSON values (lists, not tuples, numpy arrays or
        node sets): what restores it (``type(view)(data, **view.state)``) and, with
        :meth:`figure_extras`, what ``save()`` exports (:meth:`figure_state`)."""
        return {k: _plain(getattr(self, k)) for k in self.STATE}

    def figure_extras(self) -> dict[str, Any]:
        """What a figure shows that is derived, not state (a view overrides it:
        the metrics offered, a grouping's description)."""
        return {}

    def figure_state(self) -> dict[str, Any]:
        """The export payload's ``state``: :attr:`state` plus :meth:`figure_extras`,
        one shape for saving, exporting and restoring.

        Example:
            >>> import cctviz
            >>> t = cctviz.Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 2.0]})
            >>> st = cctviz.CCTView(t, selection=[1]).figure_state()
            >>> st["selection"], st["metrics"][:1]
            ([1], ['time (inc)'])
        """
        return {**self.state, **self.figure_extras()}


def _plain(value: Any) -> Any:
    """A state value as JSON: node sets as their ids, tuples and arrays as lists."""
    if isinstance(value, NodeSet):
        return [int(i) for i in value.ids]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value


def register_view(kind: str) -> Callable[[type], type]:
    """Class decorator: register a :class:`View` subclass as view ``kind`` (its
    ``_kind`` default); the front end draws it with ``js/<kind>/``.

    Example:
        >>> @register_view("doc-example")
        ... class Tiny(View):
        ...     pass
        >>> VIEW_KINDS["doc-example"] is Tiny, Tiny()._kind
        (True, 'doc-example')
        >>> del VIEW_KINDS["doc-example"]
    """

    def add(cls: type) -> type:
        if kind in VIEW_KINDS:
            raise ValueError(f"view kind {kind!r} is taken by {VIEW_KINDS[kind].__name__}")
        # the kind as the class's own trait (traitlets sets traits up when a class
        # is made): the registered class is ``cls`` with its ``_kind``
        view = type(
            cls.__name__,
            (cls,),
            {
                "_kind": traitlets.Unicode(kind).tag(sync=True),
                "__module__": cls.__module__,
                "__qualname__": cls.__qualname__,
                "__doc__": cls.__doc__,
            },
        )
        VIEW_KINDS[kind] = view
        return view

    return add


def view_kinds(kinds: Iterable[str] | None = None) -> dict[str, type]:
    """The views by kind (of ``kinds``, default all): the built-in ones and every
    one registered since.

    Example:
        >>> sorted(view_kinds())[:3]
        ['cct', 'profiles', 'sankey']
    """
    import importlib

    for module in BUILT_IN_VIEWS.values():
        importlib.import_module(module)
    return {k: v for k, v in VIEW_KINDS.items() if kinds is None or k in set(kinds)}


__all__ = [
    "CUE_SHARE",
    "View",
    "VIEW_KINDS",
    "f32",
    "i32",
    "ids_json",
    "profile_ids",
    "register_view",
    "share_space",
    "static",
    "view_kinds",
]
