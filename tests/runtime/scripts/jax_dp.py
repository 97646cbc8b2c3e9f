"""Data-parallel steps of a tiny linear model in JAX, one process a device."""

import sys
from functools import partial

import jax
import jax.numpy as jnp

jax.config.update("jax_platforms", "cpu")
jax.config.update("jax_cpu_collectives_implementation", "gloo")
jax.distributed.initialize()

n = 64
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 3


@partial(jax.pmap, axis_name="d")
def step(w, x):
    grad = jax.grad(lambda w: jnp.mean((x @ w) ** 2))(w)
    grad = jax.lax.pmean(grad, "d")  # the data-parallel all-reduce
    return w - 0.1 * grad


w = jnp.ones((jax.local_device_count(), n, n), jnp.float32)
x = jnp.ones((jax.local_device_count(), 8, n), jnp.float32)
for i in range(steps):
    with jax.profiler.StepTraceAnnotation("train", step_num=i):
        w = step(w, x).block_until_ready()
print("done", jax.process_index(), float(w.sum()))
