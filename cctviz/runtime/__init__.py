"""The companion runtime: profile (distributed) PyTorch training into per-rank trees.

- ``cctviz run [torchrun options] script.py [args]`` launches a job like
  torchrun, with every rank profiling itself (:mod:`cctviz.runtime.launch`);
- ``with cctviz.profile(out=DIR) as prof:`` profiles in-process
  (:class:`~cctviz.runtime.profiler.Profiler`).

Either way each rank writes ``DIR/rank-NNNNN.cctviz`` and rank 0 writes
``DIR/run.json``; ``cctviz.read(DIR)`` gives an Ensemble of the ranks.

The recorder (:mod:`.recorder`) and the collective byte rules
(:mod:`.comm`) know nothing of torch; :mod:`.hooks` and :mod:`.gpu` do.
"""

from .comm import bandwidth, bus_factor, collective_bytes
from .profiler import Profiler, active, profile, rank_file
from .recorder import Recorder

__all__ = [
    "Profiler",
    "profile",
    "active",
    "rank_file",
    "Recorder",
    "bandwidth",
    "bus_factor",
    "collective_bytes",
]
