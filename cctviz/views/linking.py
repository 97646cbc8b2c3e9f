"""Linked views: a node selection or a profile selection made in one view shows in the others.

:func:`link` ties any views that have a ``selection`` trait (node ids of a
tree, a NodeSet) and/or a ``selected_profiles`` trait (profile ids of an
Ensemble): CCTView, SankeyView, ProfilesView. A node selection passes
between views of different trees by call path (each view's validator maps
it); profile ids pass only between views of one Ensemble, since ids of
another mean other profiles. Changes made by the link itself are not sent
on again, so there is no echo loop; :meth:`Link.unlink` restores
independence. At link time, the first view that already holds a selection
shares it with the others.

A TimelineView linked with CCTViews scopes them in time: when its ``brush``
(or, with no brush, its ``window``) changes, each CCTView shows the ensemble of
that window (``timeline.window(t0, t1).ensemble()``, through
:meth:`CCTView.replace_data`); nodes selected in the CCTView are outlined in
the timeline (the shared ``selection``: one tree).

Example:
    >>> import cctviz
    >>> a = cctviz.Tree.from_parents([-1, 0, 0], ["main", "solve", "io"], {"time": [1.0, 4.0, 2.0]})
    >>> b = cctviz.Tree.from_parents([-1, 0, 0], ["main", "solve", "io"], {"time": [1.0, 6.0, 2.0]})
    >>> ens = cctviz.Ensemble.from_trees([a, b], profiles={"rank": [0, 1]})
    >>> tree, sankey = cctviz.CCTView(ens), cctviz.SankeyView(ens)
    >>> link = cctviz.link(tree, sankey)
    >>> tree.selection = [1]                   # "solve", clicked in the tree...
    >>> sankey.selection.names.tolist(), sankey.selected["group"].tolist()
    (['solve'], ['solve'])
    >>> sankey.selected_profiles = [1]         # rank 1, brushed in the Sankey...
    >>> tree.selected_profiles, tree.selected["time (inc)"].tolist()  # ...its values
    ([1], [6.0])
    >>> link.unlink()
    >>> tree.selection = []
    >>> sankey.selection.names.tolist()
    ['solve']
"""

from __future__ import annotations

from typing import Any

from ..model.ensemble import BaseEnsemble, Ensemble
from ..model.timeline import Timeline

#: the traits a link shares
SHARED = ("selection", "selected_profiles")


def _size(value: Any) -> int:
    ids = getattr(value, "ids", value)
    return 0 if ids is None else len(ids)


def _profile_space(view: Any) -> Ensemble | None:
    """The profiles a view's ``selected_profiles`` index: its Ensemble, or for
    a view of a Timeline (or of a window of one) the whole run's ensemble, so
    that a TimelineView, the trees of its windows and the Sankey or profiles
    view of ``timeline.ensemble()`` select ranks together."""
    data = getattr(view, "shown", None)
    timeline = data if isinstance(data, Timeline) else getattr(view, "timeline", None)
    if isinstance(timeline, Timeline):
        return timeline.whole.ensemble()
    return data if isinstance(data, BaseEnsemble) else None


class Link:
    """Views sharing ``selection`` and ``selected_profiles`` (see the module
    docstring). Use :func:`link` to make one; ``with cctviz.link(a, b):``
    unlinks at the end of the block."""

    def __init__(self, *views: Any) -> None:
        if len(views) < 2:
            raise ValueError(f"link: give two views or more, got {len(views)}")
        for v in views:
            if not any(v.has_trait(name) for name in SHARED):
                raise TypeError(
                    f"link: a {type(v).__name__} has neither a selection nor selected_profiles"
                )
        self.views = list(views)
        self._busy = False
        self._handlers: list[tuple[Any, Any, str]] = []
        for v in self.views:
            for name in SHARED:
                if v.has_trait(name):
                    handler = self._make_handler(v, name)
                    v.observe(handler, names=name)
                    self._handlers.append((v, handler, name))
        # a timeline scopes the tree views to its brushed window (not the timelines:
        # their replace_data is a live run's new timeline)
        scoped = [
            v
            for v in self.views
            if hasattr(v, "replace_data") and not hasattr(v, "brushed_timeline")
        ]
        for v in self.views:
            if hasattr(v, "brushed_timeline") and scoped:
                handler = self._make_scope(v, scoped)
                names = ["brush", "window", "_loaded"]  # _loaded: its replace_data
                v.observe(handler, names=names)
                self._handlers.append((v, handler, names))
                if len(v.brush):
                    handler({})
        # what is selected already is shared now: the first view holding a selection wins
        for name in SHARED:
            for v in self.views:
                if v.has_trait(name) and _size(getattr(v, name)):
                    self._make_handler(v, name)({"new": getattr(v, name)})
                    break

    def _make_handler(self, source: Any, name: str):
        def handler(change: dict) -> None:
            if self._busy:
                return
            self._busy = True
            try:
                for v in self.views:
                    if v is source or not v.has_trait(name):
                        continue
                    if name == "selected_profiles" and (
                        _profile_space(v) is None or _profile_space(v) is not _profile_space(source)
                    ):
                        continue
                    setattr(v, name, change["new"])
            finally:
                self._busy = False

        return handler

    def _make_scope(self, timeline_view: Any, scoped: list[Any]):
        shown: list = [None, None]  # the timeline and window the trees show

        def handler(change: dict) -> None:
            if change.get("name") == "window" and len(timeline_view.brush):
                return  # the brush decides while there is one
            now = [timeline_view.timeline, tuple(timeline_view.brushed_window)]
            if now[0] is shown[0] and now[1] == shown[1]:
                return  # a replace_data that moved the window notifies twice
            shown[:] = now
            window = timeline_view.brushed_timeline()  # its ensemble, and its waits
            for v in scoped:
                v.replace_data(window)

        return handler

    def unlink(self) -> None:
        """Stop sharing; each view keeps what it shows now."""
        for v, handler, name in self._handlers:
            v.unobserve(handler, names=name)
        self._handlers = []

    def __enter__(self) -> Link:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.unlink()

    def __repr__(self) -> str:
        kinds = ", ".join(type(v).__name__ for v in self.views)
        state = "linked" if self._handlers else "unlinked"
        return f"<cctviz.Link {state}: {kinds}>"


def link(*views: Any) -> Link:
    """Link views so that a node selection or a profile selection in one shows
    in all (:class:`Link`); ``link(...).unlink()`` undoes it.

    Example:
        >>> import cctviz
        >>> t = cctviz.Tree.from_parents([-1, 0], ["main", "solve"], {"time": [1.0, 2.0]})
        >>> a, b = cctviz.CCTView(t), cctviz.CCTView(t, chart="icicle")
        >>> with cctviz.link(a, b):
        ...     a.selection = [1]
        >>> b.selection.ids.tolist()
        [1]
    """
    return Link(*views)
