"""One process of a multi-process JAX job on CPU (jax.distributed, gloo
collectives), profiled with jax.profiler into an XPlane file of its own.

Usage: python distributed.py PROCESS_ID NUM_PROCESSES PORT OUT_DIR [N] [STEPS]

The coordinator binds to 127.0.0.1:PORT. Each process has one CPU device; each
step is a pmap'ed psum of an N x N float32 array over all the processes' devices,
inside jax.profiler.StepTraceAnnotation. Writes
OUT_DIR/plugins/profile/<run>/<host>.xplane.pb.
"""

import sys
from functools import partial

import jax

k, n_proc, port, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
n = int(sys.argv[5]) if len(sys.argv) > 5 else 64
steps = int(sys.argv[6]) if len(sys.argv) > 6 else 2
jax.config.update("jax_platforms", "cpu")
jax.config.update("jax_cpu_collectives_implementation", "gloo")
address = f"127.0.0.1:{port}"
jax.distributed.initialize(address, n_proc, k, coordinator_bind_address=address)

import jax.numpy as jnp  # noqa: E402


@partial(jax.pmap, axis_name="d")
def step(x):
    return jax.lax.psum(jnp.tanh(x @ x), "d")  # all-reduce of n*n*4 bytes


x = jnp.ones((jax.local_device_count(), n, n), jnp.float32)
with jax.profiler.trace(out):
    for i in range(steps):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            step(x).block_until_ready()
jax.distributed.shutdown()
