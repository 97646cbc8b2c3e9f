"""``cctviz run --prometheus [ADDR:]PORT``: the run, watched, served to Prometheus.

The launcher follows its own run folder with a :class:`cctviz.live.Watch`
(from a thread, polled every second) and serves what the watch says at
``http://ADDR:PORT/metrics`` in Prometheus's exposition format
(``prometheus_client``; ``pip install cctviz[prometheus]``), each series
labelled with ``job`` (the run folder's name), ``component`` ("" outside
workflows) and ``rank``:

==========================================  =======  ===============================
metric                                      type     what
==========================================  =======  ===============================
``cctviz_steps_total``                      counter  steps the rank ended (warm-up included)
``cctviz_step_seconds``                     gauge    its last step's time
``cctviz_step_wait_seconds``                gauge    its last step's wait in collectives
``cctviz_late``                             gauge    1 while it is an alerted straggler
``cctviz_late_ranks``                       gauge    alerted stragglers of the component
``cctviz_collective_seconds_total``         counter  wait in each collective's context
                                                     (label ``context``: the call path;
                                                     an async call's until it completed)
``cctviz_cpu_cores``                        gauge    cores busy (``--sample-hz``)
``cctviz_rss_peak_bytes``                   gauge    the highest RSS sampled (``--sample-hz``)
``cctviz_device_memory_peak_bytes``         gauge    the device allocator's peak
``cctviz_alerts_total``                     counter  alerts so far, by ``kind``
==========================================  =======  ===============================

The numbers are the watch's (:meth:`~cctviz.live.Watch.ranks_now`,
:meth:`~cctviz.live.Watch.collective_waits`, :attr:`~cctviz.live.Watch.alerts`),
computed once: ``cctviz watch`` and a dashboard show the same. The endpoint
binds to 127.0.0.1 unless ``ADDR`` says otherwise, answers with no series
until the first record, and closes when the job ends. A scrape config::

    scrape_configs:
      - job_name: cctviz
        static_configs: [{targets: ["127.0.0.1:9464"]}]
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import ProfileError
from ..live import Watch
from ..model.formats import RUN_FILE

#: seconds between two polls of the run folder
EVERY = 1.0


def parse_endpoint(text: str) -> tuple[str, int]:
    """``--prometheus [ADDR:]PORT`` as (address, port); 127.0.0.1 by default.

    >>> parse_endpoint("9464"), parse_endpoint("0.0.0.0:9464")
    (('127.0.0.1', 9464), ('0.0.0.0', 9464))
    """
    addr, _, port = str(text).rpartition(":")
    try:
        n = int(port)
    except ValueError:
        n = -1
    if not 0 < n < 65536:
        raise ValueError(f"--prometheus needs [ADDR:]PORT with a port of 1-65535, not {text!r}")
    return addr or "127.0.0.1", n


class WatchCollector:
    """A ``prometheus_client`` collector of a :class:`Watch` (none until the
    run has written its first record: no series)."""

    def __init__(self, job: str) -> None:
        self.job = job
        self.watch: Watch | None = None

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        w = self.watch
        if w is None:
            return
        labels = ["job", "component", "rank"]

        def family(kind: type, name: str, doc: str, more: tuple[str, ...] = ()) -> Any:
            return kind(name, doc, labels=[*labels, *more])

        now = w.ranks_now()
        steps = family(CounterMetricFamily, "cctviz_steps", "steps the rank ended")
        took = family(GaugeMetricFamily, "cctviz_step_seconds", "the rank's last step's time")
        wait = family(
            GaugeMetricFamily, "cctviz_step_wait_seconds", "its last step's wait in collectives"
        )
        late = family(GaugeMetricFamily, "cctviz_late", "1 while the rank is an alerted straggler")
        cpu = family(GaugeMetricFamily, "cctviz_cpu_cores", "cores busy (sampled)")
        rss = family(GaugeMetricFamily, "cctviz_rss_peak_bytes", "the highest RSS sampled")
        device = family(
            GaugeMetricFamily, "cctviz_device_memory_peak_bytes", "the device allocator's peak"
        )
        for rank, row in now.iterrows():
            key = [self.job, str(row["component"]), str(rank)]
            steps.add_metric(key, float(row["steps"]))
            late.add_metric(key, float(bool(row["late"])))
            for fam, column in (
                (took, "step [s]"), (wait, "wait [s]"), (cpu, "cpu"), (rss, "rss [B]"),
                (device, "device [B]"),
            ):  # fmt: skip
                if not math.isnan(value := float(row[column])):
                    fam.add_metric(key, value)
        yield from (steps, took, wait, late, cpu, rss, device)
        yield self._late_ranks(now)
        waits = family(
            CounterMetricFamily, "cctviz_collective_seconds",
            "wait in each collective's context (the call path)", ("context",),
        )  # fmt: skip
        for row in w.collective_waits().itertuples(index=False):
            waits.add_metric([self.job, row[1], str(row[0]), row[2]], float(row[3]))
        yield waits
        alerts = CounterMetricFamily("cctviz_alerts", "alerts so far", labels=["job", "kind"])
        for kind, n in w.alerts["kind"].value_counts().items():
            alerts.add_metric([self.job, str(kind)], float(n))
        yield alerts

    def _late_ranks(self, now: Any) -> Any:
        from prometheus_client.core import GaugeMetricFamily

        fam = GaugeMetricFamily(
            "cctviz_late_ranks", "alerted stragglers of the component", labels=["job", "component"]
        )
        for comp, n in now.groupby("component")["late"].sum().items():
            fam.add_metric([self.job, str(comp)], float(n))
        return fam


class Exporter:
    """The endpoint of ``cctviz run --prometheus``: serves from a thread and
    follows ``out`` from another until :meth:`close`.

    >>> with Exporter("runs/today", "127.0.0.1", 9464):  # doctest: +SKIP
    ...     run_the_job()
    """

    def __init__(self, out: str | Path, addr: str, port: int, job: str | None = None) -> None:
        try:
            from prometheus_client import CollectorRegistry, start_http_server
        except ImportError:
            raise ImportError(
                "--prometheus needs prometheus_client: pip install 'cctviz[prometheus]'"
            ) from None
        self.out = Path(out)
        self.collector = WatchCollector(job or self.out.name)
        registry = CollectorRegistry(auto_describe=False)
        registry.register(self.collector)
        try:
            self.server, _ = start_http_server(port, addr=addr, registry=registry)
        except OSError as e:
            raise OSError(f"--prometheus: cannot serve on {addr}:{port}: {e.strerror}") from None
        self.address = f"http://{addr}:{self.server.server_port}/metrics"
        self._stop = threading.Event()
        self._follower = threading.Thread(target=self._follow, name="cctviz-prometheus")
        self._follower.daemon = True
        self._follower.start()

    def _follow(self) -> None:
        """Wait for the run's first record, then poll it every :data:`EVERY` s."""
        while not self._stop.is_set():
            if not (self.out / RUN_FILE).is_file():  # the launcher has not written it yet
                self._stop.wait(EVERY / 10)
                continue
            try:
                w = Watch(self.out, wait=EVERY)
            except TimeoutError:
                continue
            except (ProfileError, OSError):  # the job ended before any record: nothing to serve
                return
            self.collector.watch = w
            w.start(every=EVERY)
            return

    def close(self) -> None:
        """Stop following and serving (the last poll's numbers were served)."""
        self._stop.set()
        self._follower.join(timeout=5 * EVERY)
        if self.collector.watch is not None:
            self.collector.watch.close()
        with contextlib.suppress(OSError):
            self.server.shutdown()
            self.server.server_close()

    def __enter__(self) -> Exporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
