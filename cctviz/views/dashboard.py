"""A live dashboard of a watched run: ``cctviz.watch(run).dashboard()``.

A column of ipywidgets: a status line (ranks, the last step every rank has
ended, its median time and the slowest rank's, the alerts), the run's
calling-context tree so far (a :class:`~cctviz.views.cct.CCTView`, its data
replaced as the run grows: the selection and what is open are kept), the
ranks' flow through it (a :class:`~cctviz.views.sankey.SankeyView` of the same
ensemble, linked to the tree: a selection in one shows in the other) over the
run's last ``last`` seconds (10 by default; None: the run so far), for a
traced run (``cctviz run --trace DIR`` or ``--timeline``) its timeline's last
``last`` seconds (a :class:`~cctviz.views.timeline.TimelineView` of
:meth:`cctviz.Watch.timeline`, linked too: the tree and the flow then show
that window, or the part of it brushed), and the alerts, newest first. A thread polls the watch and refreshes the widgets at
most once a second. Every text is set as text (names in profiles are not
trusted). :meth:`Dashboard.close` stops the thread.

Example::

    w = cctviz.watch("runs/today")
    w.dashboard()          # the last expression of a cell: shown in the notebook
"""

from __future__ import annotations

import threading
from typing import Any

import ipywidgets as widgets

from ..errors import ProfileError
from ..model.timeline import Timeline
from .cct import CCTView
from .linking import link
from .sankey import SankeyView
from .timeline import TimelineView

#: the fewest seconds between two refreshes
MIN_EVERY = 1.0
#: alerts shown (the newest)
SHOWN_ALERTS = 20
#: seconds of a traced run's timeline shown: its newest
LAST = 10.0


class Dashboard(widgets.VBox):
    """The live widgets of a :class:`~cctviz.live.Watch` (module docstring).

    Args:
        watch: the watch to show.
        every: seconds between refreshes (at least :data:`MIN_EVERY`).
        last: seconds the views show, the newest (None: the run so far): a traced
            run's timeline over them (the tree and the flow then show it); else
            the tree and the flow of those seconds (:meth:`cctviz.Watch.ensemble`).
        view: keyword arguments of the CCTView (e.g. ``color="comm_time"``).

    Attributes:
        cct, sankey: the views (linked), for selections from Python.
        timeline: the TimelineView of a traced run (None otherwise).
    """

    def __init__(
        self, watch: Any, every: float = MIN_EVERY, last: float | None = LAST, **view: Any
    ) -> None:
        if last is not None and not last > 0:
            raise ValueError(f"last: seconds > 0 (or None: all of the timeline), not {last!r}")
        self.watch = watch
        self.every = max(float(every), MIN_EVERY)
        self.last = last
        #: how many times the widgets were refreshed from the watch
        self.refreshes = 0
        self.status = widgets.Label(layout=widgets.Layout(width="100%"))
        self.status.add_class("cctviz-live-status")
        watch.poll()
        ens = watch.ensemble()
        if "time" in ens.exc_metrics:  # at the start it may be all zero: still the one to show
            view = {"color": "time", "size": "time", **view}
        self.cct = CCTView(ens, **view)
        self.sankey = SankeyView(ens)
        self.timeline = self._timeline_view()
        shown = [self.cct, self.sankey] + ([self.timeline] if self.timeline is not None else [])
        self._link = link(*shown)
        self.alert_list = widgets.VBox()
        self.alert_list.add_class("cctviz-live-alerts")
        super().__init__([self.status, *shown, self.alert_list])
        self._stop = threading.Event()
        self._refreshing = threading.Lock()
        self._shown = (-1, -1)
        self.refresh()
        self._thread = threading.Thread(target=self._loop, name="cctviz-dashboard", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            self.refresh()
            if self.watch.ended:
                self.refresh()
                return

    def refresh(self) -> None:
        """Poll the watch and show what is new (nothing is sent when nothing changed)."""
        with self._refreshing:
            self._refresh()

    def _refresh(self) -> None:
        w = self.watch
        w.poll()
        steps = w.by_step()
        alerts = w.alerts
        now = (len(steps), len(alerts))
        if now == self._shown and not w.ended:
            return
        if now[0] != self._shown[0] or w.ended:
            if self.timeline is not None:
                self._show_timeline()
            else:
                ens = w.ensemble(last=self.last)  # once: both views show the same numbers
                self.cct.replace_data(ens)
                self.sankey.replace_data(ens)
        self.status.value = _status(w, steps, alerts, self.last)
        self.alert_list.children = [
            widgets.Label(f"{a['time']:%H:%M:%S}  {a['kind']}: {a['message']}")
            for _, a in alerts.iloc[::-1].head(SHOWN_ALERTS).iterrows()
        ]
        self._shown = now
        self.refreshes += 1

    def _timeline_view(self) -> TimelineView | None:
        """A TimelineView of the run's timeline so far, if it is traced."""
        try:
            tl = self.watch.timeline()
        except ProfileError:
            return None
        return TimelineView(tl, window=self._window(tl))

    def _window(self, tl: Timeline) -> tuple[float, float] | None:
        """The newest ``last`` seconds of ``tl`` (None: all of it)."""
        t0, t1 = tl.span
        span = max((t1 - t0) / 1e9, 1e-9)
        return None if self.last is None or span <= self.last else (span - self.last, span)

    def _show_timeline(self) -> None:
        """The timeline so far, its newest seconds; the link scopes the tree and
        the flow to them (or what is brushed of them). Until a trace is on disk
        the views keep the run so far."""
        tl = self.watch.timeline()
        if len(tl):
            self.timeline.replace_data(tl, window=self._window(tl))

    def close(self) -> None:
        """Stop refreshing and close the widgets."""
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)
        self._link.unlink()
        self.cct.close()
        self.sankey.close()
        if self.timeline is not None:
            self.timeline.close()
        super().close()


def _status(w: Any, steps: Any, alerts: Any, window: float | None = None) -> str:
    """``2 ranks, running: step 41, 61.2 ms (slowest 63.0 ms), 1 alert; the views: the
    last 10 s``."""
    state = "ended" if w.ended else "running"
    text = f"{len(w.ranks)} ranks, {state}"
    if len(steps):
        last = steps.iloc[-1]
        text += (
            f": step {steps.index[-1]}, {last['time [s]'] * 1e3:.1f} ms"
            f" (slowest {last['max [s]'] * 1e3:.1f} ms)"
        )
    n = len(alerts)
    text += f", {n} alert{'s' if n != 1 else ''}" if n else ", no alert"
    return text + (f"; the views: the last {window:g} s" if window else "")


__all__ = ["Dashboard"]
