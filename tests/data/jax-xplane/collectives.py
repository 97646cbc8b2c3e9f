"""A JAX program on 2 CPU devices whose steps call each kind of collective,
profiled with jax.profiler into an XPlane file.

Usage: python collectives.py OUT_DIR [N] [STEPS]

Each step runs one pmap'ed function over an N x N float32 array per device:
psum (all-reduce), all_gather, psum_scatter (reduce-scatter), all_to_all and
ppermute (collective-permute), each inside jax.profiler.StepTraceAnnotation.
The trace starts before the first call, so that XLA compiles (and stores the
HLO of) the program while the profiler runs. Writes
OUT_DIR/plugins/profile/<run>/<host>.xplane.pb.
"""

import os
import sys

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
)
os.environ.setdefault("JAX_PLATFORMS", "cpu")

from functools import partial  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

out = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 128
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 3


@partial(jax.pmap, axis_name="d")
def step(x):
    y = jnp.tanh(x @ x)
    total = jax.lax.psum(y, "d")  # all-reduce of n*n*4 bytes
    both = jax.lax.all_gather(y, "d")  # all-gather: 2*n*n*4 bytes out
    part = jax.lax.psum_scatter(y, "d", scatter_dimension=0, tiled=True)  # reduce-scatter
    swapped = jax.lax.all_to_all(y, "d", 0, 0, tiled=True)  # all-to-all
    moved = jax.lax.ppermute(y, "d", perm=[(0, 1), (1, 0)])  # collective-permute
    return total.sum() + both.sum() + part.sum() + swapped.sum() + moved.sum()


x = jnp.ones((2, n, n), jnp.float32)
with jax.profiler.trace(out):
    for i in range(steps):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            step(x).block_until_ready()
