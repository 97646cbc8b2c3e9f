"""Small real profiles that ship with cctviz: the notebooks', the README's and your first try.

Each sample is a folder ``cctviz/examples/<name>/``: files written by a real profiler
on a real program, copied unchanged from a public project's tutorial or test data, and
that project's licence beside them (``LICENSE``, and ``NOTICE`` where it has one).
:func:`available` lists them, with what each is, where it comes from and its licence;
:func:`path` is what to hand to :func:`cctviz.read` (a file, a database folder, or the
folder of a sample of several files), :func:`files` its profile files one by one.

>>> import cctviz
>>> from cctviz import examples
>>> examples.available().loc["lulesh-scaling", ["format", "licence"]].tolist()
['caliper-json', 'MIT']
>>> [p.name for p in examples.files("lulesh-scaling")][:2]
['lulesh-annotation-profile-1core.json', 'lulesh-annotation-profile-27cores.json']
>>> runs = cctviz.read_ensemble(examples.files("lulesh-scaling"), progress=False)
>>> runs.n_profiles  # 1 + 8 + 27 + 64 ranks
100
>>> cctviz.read(examples.path("kripke-hpctoolkit")).n_profiles
64
>>> examples.licence("kripke-hpctoolkit").read_text().splitlines()[0]
'Copyright (c) 2017-2021, Lawrence Livermore National Security, LLC.'

The files are plain files of the installed package (a wheel installs them unzipped),
so a path can go to any tool, the command line included (``cctviz tree
$(python -c "import cctviz.examples as e; print(e.path('kripke-hpctoolkit'))")``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

ROOT = Path(__file__).resolve().parent

#: the licence files a sample folder may hold beside its data
LICENCE_FILES = ("LICENSE", "NOTICE")


@dataclass(frozen=True)
class Sample:
    """One bundled sample: ``data`` (a file or folder name, or a glob of several files)
    in the folder ``name``, read with ``reads`` (``read``, ``read_timeline``)."""

    name: str
    data: str
    format: str
    what: str
    origin: str
    licence: str
    copyright: str
    reads: str = "read, read_timeline"
    needs: str = ""  # the extra of cctviz that reading it needs ("" = the core)

    @property
    def folder(self) -> Path:
        return ROOT / self.name


_HATCHET_TUTORIAL = "Lawrence Livermore National Security, LLC (2017-2021)"
_PIPIT = "Parallel Software and Systems Group, University of Maryland (2021)"

#: every bundled sample, by name
SAMPLES: dict[str, Sample] = {
    s.name: s
    for s in (
        Sample(
            "lulesh-scaling",
            "lulesh-annotation-profile-*.json",
            "caliper-json",
            "LULESH (Caliper json-split) on 1, 8, 27 and 64 cores: a strong-scaling "
            "study, one file per run, one profile per rank",
            "LLNL/hatchet-tutorial data/lulesh-scaling/",
            "MIT",
            _HATCHET_TUTORIAL,
            reads="read_ensemble (files), read",
        ),
        Sample(
            "kripke-hpctoolkit",
            "hpctoolkit-kripke-database-2589696",
            "hpctoolkit",
            "Kripke on 64 ranks: an HPCToolkit database (experiment.xml and one "
            "metric-db per rank), 1,492 call paths; the database's src/ (copies of "
            "glibc sources, not read) is left out",
            "LLNL/hatchet-tutorial data/hpctoolkit-kripke-database-2589696/",
            "MIT",
            _HATCHET_TUTORIAL,
            reads="read",
        ),
        Sample(
            "kineto-nccl-ranks",
            "hta_trace_filter_sampled_rank-*.json.gz",
            "kineto",
            "torch.profiler (Kineto) traces of ranks 0 and 1 of a 128-rank NCCL job: "
            "two profiler steps each, GPU kernels, all-gather, all-reduce and all-to-all "
            "with their sizes",
            "facebookresearch/HolisticTraceAnalysis tests/data/trace_filter/"
            "sampled_rank-{0,1}.json.gz (named as in cctviz's test data)",
            "MIT",
            "Meta Platforms, Inc. and affiliates",
            reads="read (one file), read_ensemble / read_timeline (files)",
        ),
        Sample(
            "mpi-scaling-cali",
            "*.cali",
            "cali",
            "five runs (27 to 343 cores) of a LULESH MPI scaling study as native "
            "Caliper .cali files, with their run metadata (jobsize, problem_size, ...)",
            "LLNL/thicket thicket/tests/data/mpi_scaling_cali/",
            "MIT",
            "Lawrence Livermore National Security, LLC (2022)",
            reads="read (the folder)",
            needs="caliper",
        ),
        Sample(
            "cprofile-cycle",
            "cprofile-cycle.pstats",
            "cprofile",
            "a cProfile (pstats) of a small Python program with a recursive cycle",
            "LLNL/hatchet hatchet/tests/data/cprofile-hatchet-pstats/",
            "MIT",
            "Lawrence Livermore National Security, LLC (2017-2023)",
            reads="read",
        ),
        Sample(
            "pingpong-otf2",
            "ping-pong-otf2",
            "otf2",
            "a Score-P OTF2 trace archive of an MPI ping-pong on 2 ranks: regions, "
            "sends and receives with their sizes",
            "hpcgroup/pipit pipit/tests/data/ping-pong-otf2/",
            "MIT",
            _PIPIT,
            needs="scorep",
        ),
        Sample(
            "pingpong-hpctoolkit",
            "ping-pong-hpctoolkit",
            "hpctoolkit-db",
            "the same ping-pong in HPCToolkit's 2022+ database (meta.db, profile.db, "
            "cct.db, trace.db; the upstream folder's docs, metric configs and source "
            "copy left out)",
            "hpcgroup/pipit pipit/tests/data/ping-pong-hpctoolkit/",
            "MIT",
            _PIPIT,
            reads="read",
        ),
        Sample(
            "kripke-cube",
            "kripke.p8.d2.g32.r1/profile.cubex",
            "cube",
            "Kripke on 8 ranks: a Score-P CUBE4 profile with time, visits, min/max "
            "time, bytes and PAPI counters",
            "extra-p/pycubexr data/kripke.p8.d2.g32.r1/",
            "BSD-3-Clause",
            "Technical University of Darmstadt (2020-2022)",
            reads="read",
            needs="scorep",
        ),
        Sample(
            "saxpy-nsys",
            "saxpy-mpi-cuda_nsys_perlmutter0.sqlite",
            "nsys",
            "Nsight Systems SQLite export of an MPI + CUDA SAXPY on one Perlmutter GPU: "
            "NVTX and MPI ranges, CUDA API calls, kernels and copies",
            "hpcgroup/pipit (a branch's pipit/tests/data/)",
            "MIT",
            _PIPIT,
        ),
    )
}


def sample(name: str) -> Sample:
    """The :class:`Sample` called ``name``; a ``KeyError`` lists the names there are."""
    try:
        return SAMPLES[name]
    except KeyError:
        raise KeyError(f"no example {name!r}; there are: {', '.join(SAMPLES)}") from None


def files(name: str) -> list[Path]:
    """The sample's profiles: its files in name order (one entry for a file, a database
    folder or a trace archive)."""
    s = sample(name)
    found = sorted(s.folder.glob(s.data))
    if not found:
        raise FileNotFoundError(f"example {name!r}: nothing matches {s.folder / s.data}")
    return found


def path(name: str) -> Path:
    """What to give :func:`cctviz.read` for the sample: its file, database folder or
    archive, or, for a sample of several files, its folder (a folder of profiles reads
    as one Ensemble; its licence files are not profiles and are skipped)."""
    found = files(name)
    return found[0] if len(found) == 1 else sample(name).folder


def licence(name: str) -> Path:
    """The licence file (``LICENSE``) beside the sample's data."""
    return sample(name).folder / "LICENSE"


def available() -> pd.DataFrame:
    """One row per sample: what it is, its format, how it reads, the extra of cctviz it
    needs, how many files it bundles and their size (licence files left out), where it
    comes from, its licence and copyright holder."""
    import pandas as pd

    rows = []
    for s in SAMPLES.values():
        data = [p for p in s.folder.rglob("*") if p.is_file() and p.name not in LICENCE_FILES]
        rows.append(
            {
                "name": s.name,
                "what": s.what,
                "format": s.format,
                "reads": s.reads,
                "needs": s.needs and f"cctviz[{s.needs}]",
                "files": len(data),
                "size [B]": sum(p.stat().st_size for p in data),
                "origin": s.origin,
                "licence": s.licence,
                "copyright": s.copyright,
            }
        )
    return pd.DataFrame(rows).set_index("name")


__all__ = ["Sample", "SAMPLES", "available", "files", "licence", "path", "sample"]
