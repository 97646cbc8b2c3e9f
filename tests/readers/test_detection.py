"""Every real sample is detected as its own format, and every other reader refuses it.

This is the cross-format half of "bad input": a file of another format must be
recognised as such, never half-read by the wrong reader. Each reader's own test
module checks content and fuzzes its samples; here each sample meets every reader.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import cctviz
from cctviz import ProfileError
from cctviz.readers import detect, formats
from tests.conftest import DATA

H = DATA / "hatchet"
SAMPLES = {
    # path relative to ../shared/data (or absolute: the repository's tests/data) -> its format
    str(Path(__file__).parents[1] / "data/jax-xplane/collectives-2cpu.xplane.pb"): "xplane",
    "hatchet/json/hatchet-graph-literal.json": "hatchet-json",
    "hatchet/caliper-cpi-json/cpi-callpath-profile.json": "caliper-json",
    "hatchet/caliper-lulesh-json/lulesh-annotation-profile.json": "caliper-json",
    "hatchet/caliper-ordered-json/caliper-region-node-order.json": "caliper-json",
    "hatchet/caliper-ordered-duplicate-json/caliper-region-dup-node-order.json": "caliper-json",
    "hatchet-tutorial/lulesh-scaling/lulesh-annotation-profile-8cores.json": "caliper-json",
    "hatchet/caliper-lulesh-cali/lulesh-annotation-profile.cali": "cali",
    "hatchet/caliper-sw4-cuda-activity-cali/caliper_cuda_activity_profile.cali": "cali",
    "hatchet-tutorial/cali-demo/c5UcO9xwAUKNVVFg1_2.cali": "cali",
    "thicket/mpi_scaling_cali/27_cores.cali": "cali",
    "thicket/rajaperf/lassen/clang10.0.1_nvcc10.2.89_1048576/3/Base_CUDA-block_128.cali": "cali",
    "hatchet/pyinstrument-hatchet-json/pyinstrument-hatchet-profile.json": "pyinstrument",
    "hatchet/cprofile-hatchet-pstats/cprofile-cycle.pstats": "cprofile",
    "hatchet/cprofile-hatchet-pstats/cprofile-cycle-py2.pstats": "cprofile",
    "hatchet/hpctoolkit-cpi-database": "hpctoolkit",
    "hatchet/hpctoolkit-allgather-database": "hpctoolkit",
    "hatchet-tutorial/hpctoolkit-kripke-database-2589696": "hpctoolkit",
    "pipit/ping-pong-hpctoolkit": "hpctoolkit-db",
    "hatchet/gprof2dot-cpi/callgrind.dot.64042.0.1": "gprof-dot",
    "hatchet/tau-cpi-mpi": "tau",
    "pipit/ping-pong-otf2": "otf2",
    "pipit/ping-pong-otf2-papi/traces.otf2": "otf2",
    "nsys/saxpy-mpi-cuda_nsys_perlmutter0.sqlite": "nsys",
    "hatchet/timemory/wall.tree.json": "timemory",
    "thicket/example-json/user_ensemble.json": "thicket-json",
    "kineto/hta_amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz": "kineto",
    "kineto/hta_call_stack_backward_thread.json": "kineto",
    "kineto/hta_cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz": "kineto",
    "kineto/hta_nccl_parser_config_nccl_data.json.gz": "kineto",
    "kineto/hta_trace_filter_sampled_rank-0.json.gz": "kineto",
    "kineto/kineto_tb_resnet50_2021.json.gz": "kineto",
    "linux-perf/simple.linux-perf.txt": "perf",
    "linux-perf/simple-with-pid.linux-perf.txt": "perf",
    "linux-perf/system-wide.linux-perf.txt": "perf",
    "chrome-trace/workload.viztracer.json": "chrome",
    "chrome-trace/workload.pyspy.chrometrace.json": "chrome",
    **{f"scorep-cube/{p.parent.name}/{p.name}": "cube" for p in DATA.glob("scorep-cube/*/*.cubex")},
}
# formats without a sample in ../shared/data: files written by cctviz's own writers
WRITTEN = {"speedscope": "profile.speedscope.json", "folded": "profile.folded"}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    d = tmp_path_factory.mktemp("written")
    tree = cctviz.read(H / "json/hatchet-graph-literal.json")
    out = {}
    for fmt, name in WRITTEN.items():
        out[fmt] = cctviz.write(tree, d / name, format=fmt)
    return out


def _all_samples(written):
    items = [(DATA / rel, fmt) for rel, fmt in SAMPLES.items()]
    items += [(written[fmt], fmt) for fmt in WRITTEN]
    return items


def test_every_format_has_a_sample_here():
    named = set(SAMPLES.values()) | set(WRITTEN)
    readers = set(formats()) - {"cctviz", "cctviz-run", "hatchet-literal"}  # tested elsewhere
    assert readers <= named, f"formats with no sample in the detection test: {readers - named}"


@pytest.mark.parametrize("rel", list(SAMPLES), ids=lambda r: r.split("/")[-1])
def test_sample_is_detected_as_its_format(rel):
    assert detect(DATA / rel) == SAMPLES[rel]


def test_written_files_are_detected(written):
    for fmt, p in written.items():
        assert detect(p) == fmt


@pytest.mark.parametrize("fmt", sorted(set(SAMPLES.values()) | set(WRITTEN)))
def test_other_formats_are_refused(fmt, written):
    """Reading a sample of format A with ``format=B`` is a ProfileError naming the file."""
    for path, own in _all_samples(written):
        if own == fmt:
            continue
        with pytest.raises(ProfileError) as info:
            cctviz.read(path, format=fmt)
        assert info.value.path is not None
        assert str(info.value).startswith(info.value.path)


def test_detection_asks_readers_in_the_declared_order():
    from cctviz import readers

    modules = [r.read.__module__.rsplit(".", 1)[1] for r in readers._READERS.values()]
    ranks = [readers.DETECTION_ORDER.index(m) for m in modules]
    assert ranks == sorted(ranks)
    assert modules[-1] == "folded"  # the loosest sniff (any text of `a;b 12` lines) is last
