"""Hypothesis profiles: one for CI, one for the quick loop, the default for the rest.

Choose one with ``HYPOTHESIS_PROFILE`` (``scripts/test.sh`` sets ``ci``):

- ``ci``: every property test with the examples it asks for, derandomised, so a
  run is repeatable and a failure seen in CI is seen again on any machine;
- ``quick``: at most :data:`QUICK_EXAMPLES` examples a test, for the inner loop;
- ``dev`` (default): random examples, as many as each test asks for.

Tests write ``@settings(max_examples=examples(40), ...)``: the number the test
wants, cut down under ``quick``.
"""

from __future__ import annotations

import os

from hypothesis import settings

QUICK_EXAMPLES = 8
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "dev")

settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True)
settings.register_profile("quick", deadline=None, max_examples=QUICK_EXAMPLES)
settings.register_profile("dev", deadline=None)
settings.load_profile(PROFILE)


def examples(n: int) -> int:
    """``n`` examples, or at most :data:`QUICK_EXAMPLES` under the ``quick`` profile."""
    return min(n, QUICK_EXAMPLES) if PROFILE == "quick" else n
