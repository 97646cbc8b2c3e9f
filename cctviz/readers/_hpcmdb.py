"""What the ``experiment.xml`` reader (:mod:`cctviz.readers.hpctoolkit`) needs for
HPCToolkit databases that are not plain hpcprof output: hpcviewer's merged
metric-db file, and the version check with its refusal message. A helper, not a
reader.

hpcviewer (2013-2021), on first showing per-thread values, merged a database's
``*.metric-db`` files into one file beside ``experiment.xml`` and deleted them;
databases opened once in hpcviewer hold that file instead. Its name is
``experiment-N.mdb`` (``N`` the first character of the MetricDB ``db-glob`` when a
digit, else 1), ``experiment.mdb`` in earlier viewers. The layout (big-endian, as
hpcviewer's ``MergeDataFiles`` writes it):

- ``int32`` type (bit flags: several processes, several threads), ``int32`` count;
- per merged file, in file-name order: ``int32`` rank, ``int32`` thread, ``int64``
  byte offset of the file's copy in the merged file;
- the metric-db files, byte for byte (each with its own ``HPCPROF-metricdb__`` header);
- the end marker ``0xFFFFFFFFDEADF00D`` (``int64``).

>>> merged_name("*.metric-db"), merged_name("2.*.metric-db")
('experiment-1.mdb', 'experiment-2.mdb')
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import ProfileError

MARKER = 0xFFFFFFFFDEADF00D
HEAD = 8  # type, count
ENTRY = np.dtype([("rank", ">i4"), ("thread", ">i4"), ("offset", ">i8")])

# what cctviz reads of HPCToolkit, for the refusal messages
READS = (
    "cctviz reads experiment.xml version 2.x (hpcprof and hpcprof-mpi up to 2021) with "
    "its *.metric-db files, hpcviewer's merged experiment-N.mdb, or the summary values "
    "inline, and the 2022+ database (meta.db, format 'hpctoolkit-db')"
)
SPARSE_MAGIC = (b"HPCPROF-tmsdb", b"HPCPROF-cmsdb")


def merged_name(glob: str) -> str:
    """The merged file hpcviewer writes for the metric-db files of ``glob``."""
    n = glob[:1]
    return f"experiment-{n if n.isdigit() else 1}.mdb"


def find_merged(folder: Path, glob: str) -> Path | None:
    """The merged metric-db file of ``folder`` (``experiment-N.mdb``, then the older
    ``experiment.mdb``), or None."""
    for name in (merged_name(glob), "experiment.mdb"):
        if (folder / name).is_file():
            return folder / name
    return None


def read_merged(path: Path) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]:
    """The merged file's bytes, its index (rank, thread, offset) and the byte range
    ``[start, end)`` of every metric-db copy in it (checked: inside the file, in
    order, the end marker present).

    Example:
        >>> import tempfile
        >>> d = Path(tempfile.mkdtemp()) / "experiment-1.mdb"
        >>> _ = d.write_bytes(bytes(8) + (0xFFFFFFFFDEADF00D).to_bytes(8, "big"))
        >>> read_merged(d)[1].size
        0
    """
    try:
        raw = np.fromfile(path, dtype=np.uint8)
    except OSError as e:
        raise ProfileError(path, f"cannot read the file: {e}") from None
    size = raw.size
    if size < HEAD + 8:
        raise ProfileError(path, f"{size} bytes: too short for hpcviewer's merged metric-db file")
    if int(raw[-8:].view(">u8")[0]) != MARKER:
        raise ProfileError(
            path,
            "no end marker 0xFFFFFFFFDEADF00D: not a complete merged metric-db file "
            "(hpcviewer stopped while merging?)",
            where=f"byte {size - 8}",
        )
    count = int(raw[4:8].view(">i4")[0])
    index_end = HEAD + count * ENTRY.itemsize
    if count < 0 or index_end > size - 8:
        raise ProfileError(path, f"{count} merged files in the header do not fit", "byte 4")
    index = raw[HEAD:index_end].view(ENTRY)
    starts = index["offset"].astype(np.int64)
    ends = np.append(starts[1:], size - 8)
    bad = (starts < index_end) | (ends < starts) | (ends > size - 8)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ProfileError(
            path,
            f"merged file {k} starts at byte {starts[k]}, outside the data "
            f"({index_end} to {size - 8}) or before the one before it",
            where=f"byte {HEAD + k * ENTRY.itemsize + 8}",
        )
    return raw, index, list(zip(starts.tolist(), ends.tolist()))


def refuse_version(xml: Path, version: str) -> None:
    """Raise the ProfileError for an ``experiment.xml`` version cctviz does not read,
    naming the version (and the sparse files' header when they are there).

    Example:
        >>> refuse_version(Path("db/experiment.xml"), "2.2")  # read: no error
        >>> try:
        ...     refuse_version(Path("db/experiment.xml"), "4.0")
        ... except ProfileError as e:
        ...     print("version 4.0" in str(e), "meta.db" in str(e))
        True True
    """
    major = version.split(".")[0].strip()
    if major == "2":
        return
    if major == "4":
        found = _sparse_header(xml.parent)
        raise ProfileError(
            xml,
            f"experiment.xml version {version}: the 'sparse' database of hpcprof 2020-2022 "
            f"(values in profile.db and cct.db{found}), which cctviz does not read. "
            f"{READS}: run a 2022 or newer hpcprof on the measurements directory",
        )
    raise ProfileError(xml, f"experiment.xml version {version} is unknown to cctviz. {READS}")


def _sparse_header(folder: Path) -> str:
    """``", profile.db header HPCPROF-tmsdb version 1"`` when the file is there."""
    for name in ("profile.db", "cct.db"):
        try:
            with open(folder / name, "rb") as f:
                h = f.read(20)
        except OSError:
            continue
        if h.startswith(SPARSE_MAGIC) and len(h) > 18:
            return f"; {name} header {h[:13].decode()} version {h[18]}"
    return ""
