import numpy as np
import pandas as pd
from hypothesis import given, settings

import cctviz
from cctviz import Ensemble
from tests.conftest import DATA, LULESH_SCALING
from tests.strategies import trees


@settings(max_examples=30, deadline=None)
@given(trees())
def test_tree_round_trip_is_exact(t):
    import tempfile
    from pathlib import Path

    t = t.add_metric("bytes", np.arange(len(t)) * 3.0, unit="bytes")
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "t.cctviz"
        cctviz.write(t, p)
        back = cctviz.read(p)
        assert back == t
        assert back.metrics.equals(t.metrics)
        assert back.units == {"bytes": "bytes"}


def test_real_ensemble_round_trip_is_exact(tmp_path):
    cpi = cctviz.read(DATA / "hatchet/caliper-cpi-json/cpi-callpath-profile.json")
    ens = cctviz.read_ensemble([str(p) for p in LULESH_SCALING[:3]] + [], progress=False)
    for obj, name in ((cpi, "cpi"), (ens, "lulesh")):
        p = tmp_path / f"{name}.cctviz"
        obj.save(p)
        back = cctviz.read(p)
        assert isinstance(back, Ensemble)
        assert back == obj
        pd.testing.assert_frame_equal(back.data, obj.data)
        pd.testing.assert_frame_equal(back.profiles, obj.profiles)
        pd.testing.assert_frame_equal(back.tree.nodes, obj.tree.nodes)
        assert cctviz.readers.detect(p) == "cctviz"
