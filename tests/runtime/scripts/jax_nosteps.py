"""A single-process JAX program (2 CPU devices, a pmap'ed psum) that marks no steps."""

import os

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"

from functools import partial  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402


@partial(jax.pmap, axis_name="d")
def total(x):
    return jax.lax.psum(x * 2.0, "d")


for _ in range(2):
    total(jnp.ones((2, 32, 32), jnp.float32)).block_until_ready()
