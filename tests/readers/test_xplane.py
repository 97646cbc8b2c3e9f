"""XPlane files (issue 39): JAX on CPU devices made here, real GPU and TPU files
from public repositories (tests/data/*/README.md), checked against jax's own
XPlane reader (``jax.profiler.ProfileData``) where jax is installed and against
the HLO text the files themselves hold."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cctviz
from cctviz.errors import ProfileError
from cctviz.ops import collectives

DATA = Path(__file__).parent.parent / "data"
CPU = DATA / "jax-xplane" / "collectives-2cpu.xplane.pb"
MI300 = DATA / "xplane-tracelens-mi300" / "tw003.xplane.pb"
TPU = DATA / "xplane-xprof-tpu" / "tpu_inference_2.xplane.pb"
SCRIPT = DATA / "jax-xplane" / "collectives.py"
N = 96  # the array per device of the fresh run: N x N float32

#: bytes per call (nccl-tests' sizes) of each collective of collectives.py, of N
BYTES = {
    "all_reduce": lambda n: 4 * n * n,
    "all_gather": lambda n: 2 * 4 * n * n,  # the whole output of 2 devices
    "reduce_scatter": lambda n: 4 * n * n,  # the whole input
    "all_to_all": lambda n: 4 * n * n,
    "collective_permute": lambda n: 4 * n * n,
}


@pytest.fixture(scope="session")
def fresh_trace(tmp_path_factory) -> Path:
    """collectives.py run now under jax.profiler (3 steps)."""
    pytest.importorskip("jax")
    out = tmp_path_factory.mktemp("jax-xplane")
    subprocess.run([sys.executable, str(SCRIPT), str(out), str(N), "3"], check=True, timeout=300)
    (path,) = out.glob("plugins/profile/*/*.xplane.pb")
    return path


def _comm_bytes_per_call(ens: cctviz.Ensemble) -> dict[str, np.ndarray]:
    nodes = ens.tree.nodes
    comm = np.flatnonzero(nodes["kind"].to_numpy() == "comm")
    calls = ens.values("calls")[comm]
    per_call = ens.values("comm_bytes")[comm] / np.where(calls > 0, calls, np.nan)
    return dict(zip(nodes["collective"].to_numpy()[comm], per_call))


def _check_cpu_trace(path: Path, n: int, steps: int) -> None:
    tl = cctviz.read_timeline(path)
    ens = cctviz.read(path)
    assert ens.profiles[["kind", "device", "rank"]].values.tolist() == [
        ["device", "CPU:0", 0], ["device", "CPU:1", 1], ["host", "/host:CPU", -1],
    ]  # fmt: skip
    # device > jitted function > HLO module > HLO ops
    paths = {tuple(ens.tree.path(k)) for k in range(len(ens.tree))}
    assert ("device", "_fun", "jit__fun") in paths
    # each collective: its kind, its bytes per call from the HLO shapes, on both devices
    per_call = _comm_bytes_per_call(ens)
    assert set(per_call) == set(BYTES)
    for kind, expect in BYTES.items():
        assert np.array_equal(per_call[kind][:2], [expect(n)] * 2), kind
        assert np.isnan(per_call[kind][2])  # the host profile has none
    # every call matched across the two devices, in its step, with its bytes
    inst = collectives.instances(tl)
    assert (
        inst.groupby("instance")["rank"].apply(sorted)
        == pd.Series([[0, 1]] * len(set(inst["instance"])))
    ).all()
    assert len(set(inst["instance"])) == steps * len(BYTES)
    assert sorted(set(inst["step"])) == list(range(steps))
    assert (inst["matched"] == "order").all()
    kinds = tl.events["collective"].to_numpy()[inst["event"].to_numpy()]
    assert np.array_equal(inst["bytes"].to_numpy(), [BYTES[k](n) for k in kinds])
    # the timeline aggregates to read()'s numbers
    assert np.allclose(tl.ensemble().values("time"), ens.values("time"))
    assert tl.steps(1).events["start"].min() >= tl.events["start"].min()


def test_the_committed_cpu_trace():
    """The 2-device CPU trace made by collectives.py (64 x 64, 2 steps)."""
    _check_cpu_trace(CPU, 64, 2)


@pytest.mark.slow  # jax is in the main test environment, not the core suite's
def test_a_jax_program_run_now(fresh_trace):
    _check_cpu_trace(fresh_trace, N, 3)


@pytest.mark.slow
@pytest.mark.parametrize("path", [CPU, MI300, TPU], ids=["cpu", "mi300", "tpu"])
def test_ops_agree_with_jax_s_own_reader(path, fresh_trace):
    """Per device and op: the calls and the time of jax.profiler.ProfileData's
    events (XLA's C++ reader of the same protobuf) equal the timeline's."""
    from jax.profiler import ProfileData

    tl = cctviz.read_timeline(path)
    ev = tl.events
    node_kind = tl.tree.nodes["kind"].to_numpy()[ev["node"].to_numpy()]
    ops = ev[np.isin(node_kind, ["kernel", "comm"])]
    device = tl.profiles["device"].to_numpy()[ops["profile"].to_numpy()]
    ours = (
        pd.DataFrame({"device": device, "dur": ops["end"] - ops["start"]})
        .groupby("device")["dur"].agg(["size", "sum"])
    )  # fmt: skip
    theirs: dict[str, list[float]] = {}
    for plane in ProfileData.from_file(str(path)).planes:
        for line in plane.lines:
            for e in line.events:
                stats = dict(e.stats)
                if plane.name.startswith("/device:"):
                    if line.name in ("XLA Ops",) or (
                        "hlo_op" in stats and line.name != "Async XLA Ops"
                    ):
                        theirs.setdefault(plane.name.split(":", 1)[1], []).append(e.duration_ns)
                elif "hlo_op" in stats and "device_ordinal" in stats:
                    theirs.setdefault(f"CPU:{int(stats['device_ordinal'])}", []).append(
                        e.duration_ns
                    )
    assert sorted(theirs) == sorted(ours.index)
    for dev, durs in theirs.items():
        assert ours.loc[dev, "size"] == len(durs), dev
        # whole ns each end (ps in the file): within 1 ns an event
        assert abs(ours.loc[dev, "sum"] - sum(durs)) <= len(durs), dev


def test_real_gpu_file():
    """8 MI300 GPUs: a profile per GPU, the kernels of HLO ops under their op."""
    ens = cctviz.read(MI300)
    assert ens.profiles["device"].tolist() == [f"GPU:{k}" for k in range(8)] + ["/host:CPU"]
    assert ens.profiles["rank"].tolist() == [*range(8), -1]
    paths = {tuple(ens.tree.path(k)) for k in range(len(ens.tree))}
    assert ("device", "forward_3d_conv", "jit_forward_3d_conv") in paths
    kernels = ens.tree.nodes["kind"].to_numpy() == "kernel"
    calls = ens.values("calls")[kernels].sum(axis=0)
    assert (calls[1:8] == 25).all()  # 25 kernels of HLO ops on each of GPUs 1-7


def test_real_tpu_file_s_all_reduce():
    """4 TPU chips: the all-reduce of jit__psum has the bytes and the group the
    file's own HLO text gives (``f32[5,1024,1024,256]``, ``replica_groups=[4,2]``)."""
    from cctviz.readers._xspace import decode

    space = decode(TPU.read_bytes())
    plane = next(p for p in space.planes if p.name == "/device:TPU:0")
    text = next(m.name for m in plane.event_metadata.values() if m.display_name == "all-reduce")
    dims = [int(d) for d in re.search(r"= f32\[([\d,]+)\]", text).group(1).split(",")]
    group = int(re.search(r"replica_groups=\[\d+,(\d+)\]", text).group(1))
    tl = cctviz.read_timeline(TPU)
    ens = tl.ensemble()
    assert ens.profiles["device"].tolist() == ["TPU:0", "TPU:1", "TPU:2", "TPU:3", "/host:CPU"]
    node = int(np.flatnonzero(ens.tree.nodes["collective"].to_numpy() == "all_reduce")[0])
    assert ens.tree.nodes["group_size"][node] == group == 2
    calls = ens.values("calls")[node][:4]
    assert (calls > 0).all()
    assert np.array_equal(ens.values("comm_bytes")[node][:4] / calls, [4 * np.prod(dims)] * 4)
    assert ens.tree.path(node)[:3] == ("device", "_psum", "jit__psum")
    # the module executions hold the ops: a module's time is what its ops leave
    module = ens.tree.nodes["kind"].to_numpy() == "module"
    assert (ens.values("time")[module] >= 0).all()
    assert ens.meta["xplane"]["no_steps"]


def test_bad_input(tmp_path):
    # named .xplane.pb but not one: a ProfileError naming the file
    bad = tmp_path / "x.xplane.pb"
    bad.write_bytes(b"\xff\xff\xff not a protobuf")
    with pytest.raises(ProfileError, match=r"x\.xplane\.pb.*not an XPlane protobuf"):
        cctviz.read(bad)
    # cut short
    cut = tmp_path / "cut.xplane.pb"
    cut.write_bytes(CPU.read_bytes()[: CPU.stat().st_size // 2])
    with pytest.raises(ProfileError, match="not an XPlane protobuf"):
        cctviz.read(cut)
    # a newer schema: fields this reader does not know are skipped and named
    newer = tmp_path / "newer.xplane.pb"
    extra_plane = b"\x12\x0c/host:future" + b"\xa0\x01\x07"  # name, then field 20 = 7
    newer.write_bytes(
        CPU.read_bytes() + b"\x0a" + bytes([len(extra_plane)]) + extra_plane + b"\x78\x01"
    )  # fmt: skip
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ens = cctviz.read(newer)
    said = " ".join(str(w.message) for w in caught)
    assert "newer XPlane schema" in said and "XPlane field 20" in said and "XSpace field 15" in said
    assert np.allclose(ens.values("time"), cctviz.read(CPU).values("time"))


@pytest.mark.slow
def test_fuzzed_files_are_read_or_refused(tmp_path):
    """Bytes changed at random in the MI300 sample: read, or a ProfileError naming
    the file; never another exception (a bug)."""
    rng = np.random.default_rng(39)
    raw = np.frombuffer(MI300.read_bytes(), dtype=np.uint8)
    for k in range(150):
        bad = raw.copy()
        at = rng.integers(0, bad.size, size=int(rng.integers(1, 8)))
        bad[at] = rng.integers(0, 256, size=at.size, dtype=np.uint8)
        path = tmp_path / f"f{k}.xplane.pb"
        path.write_bytes(bad.tobytes())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                cctviz.read_timeline(path)
            except ProfileError as e:
                assert str(path) in str(e)


@pytest.mark.slow
def test_a_multi_process_jax_job_reads_as_one_timeline(tmp_path):
    """Two jax.distributed processes on CPU (gloo), one XPlane file each: read
    together, a device profile per process (JAX's global device ids) and each
    psum matched across the processes with its bytes."""
    pytest.importorskip("jax")
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    script, n = DATA / "jax-xplane" / "distributed.py", 64
    procs = [
        subprocess.Popen([sys.executable, str(script), str(k), "2", str(port), str(tmp_path / f"p{k}"), str(n), "3"])
        for k in range(2)
    ]  # fmt: skip
    try:
        assert [p.wait(timeout=300) for p in procs] == [0, 0]
    finally:
        for p in procs:
            p.kill()
    files = [next((tmp_path / f"p{k}").glob("plugins/profile/*/*.xplane.pb")) for k in range(2)]
    tl = cctviz.read_timeline(files)
    devices = tl.profiles[tl.profiles["kind"] == "device"]
    assert len(devices) == 2 and devices["process_id"].nunique() == 2
    assert devices["rank"].nunique() == 2
    inst = collectives.instances(tl)
    assert len(set(inst["instance"])) == 3
    assert (inst.groupby("instance")["rank"].nunique() == 2).all()
    assert (inst["bytes"] == 4 * n * n).all()
    assert sorted(set(inst["step"])) == [0, 1, 2]


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def test_collectives_without_their_hlo_are_named_and_said(tmp_path):
    """The committed CPU trace without its /host:metadata plane (the modules' HLO,
    as in a file whose programs were compiled before the trace began): the
    collectives are still kind comm, named by their ops, without bytes, and a
    warning says how to get the bytes."""
    from cctviz.readers._protobuf import fields

    kept = b""
    for number, _, value in fields(CPU.read_bytes()):
        if number == 1 and b"/host:metadata" in bytes(value)[:64]:
            continue
        kept += _varint(number << 3 | 2) + _varint(len(value)) + bytes(value)
    path = tmp_path / "no-hlo.xplane.pb"
    path.write_bytes(kept)
    with pytest.warns(UserWarning, match="without their module's HLO"):
        ens = cctviz.read(path)
    comm = ens.tree.nodes["kind"].to_numpy() == "comm"
    assert set(ens.tree.nodes["collective"][comm]) == set(BYTES)
    assert (
        np.isnan(ens.values("comm_bytes")[comm]).all() or not ens.values("comm_bytes")[comm].any()
    )
    assert ens.meta["xplane"]["collectives_without_bytes"] == len(BYTES)
