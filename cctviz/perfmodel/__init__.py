"""Performance models: what should have happened, beside what was measured.

- :mod:`.analytic`: communication volumes per rank per step by parallel
  strategy (DDP, ZeRO-1/2/3, FSDP, tensor and pipeline parallel), alpha-beta
  times with nccl-tests' bus-bandwidth factors, memory per rank (model states,
  activations);
- :mod:`.footprint`: each rank's model states to the byte by strategy
  (parameters, gradients, optimizer states; DDP, ZeRO-1, FSDP2), beside what a
  run measured;
- :mod:`.plan`: what one measured run tells the models (``plan(run).spec``:
  the model, each module's shapes in a step, optimizer, batch, sequence,
  world size, strategy) and what it predicts of other configurations
  (``predict``, ``table``: step time and memory per rank, term by term;
  :mod:`.steptime` says how each term scales);
- :mod:`.scaling`: empirical scaling models across runs in Extra-P's
  performance-model normal form, fitted per node, vectorised;
- :mod:`.replay` (:mod:`.graph`, :mod:`.whatif`): a trace replayed from its
  dependency graph across ranks: measured against replayed steps, the critical
  path, what-if predictions and the opportunities they rank;
- :mod:`.compare`: predicted metrics on a runtime profile's tree
  (``annotate``), and measured collective time split into transfer and wait.

Pure numpy/pandas over the model: no torch (a module is read duck-typed,
``.named_parameters()``), no views.
"""

from .analytic import (
    INTERCONNECTS,
    Interconnect,
    ModelSpec,
    ParallelSpec,
    collective_time,
    communication,
    fit_alpha_beta,
    memory,
)
from .compare import annotate, fit_interconnect, wait_transfer
from .footprint import OptimizerLayout, model_states, states_of_run
from .plan import Plan, plan
from .replay import CriticalPath, Replay, ReplayWarning, replay
from .scaling import fit_scaling
from .whatif import Balance, Bandwidth, Delay, Scale

__all__ = [
    "Balance",
    "Bandwidth",
    "CriticalPath",
    "Delay",
    "Replay",
    "ReplayWarning",
    "Scale",
    "replay",
    "INTERCONNECTS",
    "Interconnect",
    "ModelSpec",
    "OptimizerLayout",
    "Plan",
    "ParallelSpec",
    "annotate",
    "collective_time",
    "communication",
    "fit_alpha_beta",
    "fit_interconnect",
    "fit_scaling",
    "memory",
    "model_states",
    "plan",
    "states_of_run",
    "wait_transfer",
]
