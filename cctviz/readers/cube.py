"""CUBE4 profiles (``.cubex``), as Score-P and Scalasca write them.

:func:`read_cube` returns an :class:`~cctviz.Ensemble` with one profile per
CUBE *location* (a thread of an MPI rank; a GPU stream is a location too),
over the call tree of CUBE's ``cnode`` elements. Reading uses the
``pycubexr`` package (``pip install 'cctviz[scorep]'``).

Format facts (CUBE 4.x; see pycubexr's ``docs/cube_file_format.md``):

- A ``.cubex`` file is a tar archive: ``anchor.xml`` (metrics, regions, the
  call tree of ``cnode`` elements with ``calleeId`` naming a region, and the
  system tree: machine > node > location group (an MPI rank) > location (a
  thread)) plus one ``N.index``/``N.data`` pair per metric with data. A
  metric defined in ``anchor.xml`` without data files recorded nothing.
- Every metric has a *call-tree type*: ``EXCLUSIVE`` (stored per cnode) or
  ``INCLUSIVE`` (stored as the value of the whole subtree: Score-P's
  ``time`` and hardware counters), a data type (``UINT64``, ``DOUBLE``,
  ``MINDOUBLE``, ``MAXDOUBLE``...) and a unit of measure (``sec``,
  ``bytes``, ``occ`` for occurrences, ``#`` for counter events).
- Metrics form a tree too (Scalasca's ``time`` > ``execution`` > ``mpi``):
  each metric stores its *own* values, exclusive along the metric tree (what
  ``cube_dump -x excl`` prints); CUBE's collapsed view of a parent metric adds
  its children's.

Choices:

- Nodes: one per cnode, named by its region's ``name`` (Score-P writes the
  demangled name there), with the cnode's parameters appended
  (``"foo [n=3]"``) so that parameter nodes stay distinct call paths. Columns:
  ``file``/``line`` (the region's ``mod`` and ``begin``: where CUBE says the
  region is defined; ``None``/0 when unknown; a ``mod`` that is no file
  name, Score-P's ``MPI`` or ``OMP``, goes to ``module``), ``paradigm`` and ``role``
  (Score-P's: ``mpi``/``point2point``, ``compiler``/``function``...),
  ``mangled`` (the region's mangled name) and ``cnode`` (CUBE's cnode id).
  Kinds: MPI communication and synchronisation (paradigm ``mpi`` with a
  collective, point-to-point, barrier or one-sided role) ``comm``; Score-P's
  artificial and user regions and OpenMP constructs ``region``; everything
  else ``function``.
- Profiles: ``ens.profiles`` has ``rank`` (the location group's rank: the MPI
  rank), ``thread`` (the location's rank in its group), ``location`` (CUBE's
  location id: the ``Thread ID`` column of ``cube_dump``), ``location_type``,
  ``location_name`` and ``host`` (the system-tree node). A single-location
  file is an Ensemble of one profile, as the TAU and HPCToolkit readers do.
- Metrics keep CUBE's unique names (``visits``, ``time``, ``min_time``,
  ``max_time``, ``bytes_sent``...), every one of them, as exclusive columns;
  a metric with no data in the file is a column of zeros (NaN for a min/max),
  listed in ``meta["cube_no_data"]``. Values are each metric's own values
  along the metric tree; ``meta["cube_metric_parent"]`` maps a child metric
  to its parent (add them up for CUBE's collapsed value).
- Call-tree semantics: an ``INCLUSIVE`` metric's exclusive values are its
  values minus its children's (so ``"time (inc)"`` gives the file's values
  back); an ``EXCLUSIVE`` metric is kept as stored.
- Aggregation rules (``meta["aggregation"]``): ``MINDOUBLE`` metrics
  (``min_time``: the shortest single visit, inclusive time) are ``"min"``,
  ``MAXDOUBLE`` ones (``max_time``, ``maximum_heap_memory_allocated``) ``"max"``:
  their ``(inc)`` is the minimum/maximum over the subtree, as CUBE's
  inclusive view. Visits, times, bytes and counter events are ``"sum"``.
  CUBE stores 0 for the minimum and maximum of a call path a location never
  visited; cctviz stores nothing there (NaN: not measured), so a subtree's
  minimum is over the visits that happened. CubeLib counts that 0, so its
  inclusive ``min_time`` is 0 wherever some call path below was not visited
  by that location (``incl.csv`` of the ``time.p4`` sample).
- Units (``meta["units"]``): ``sec`` -> ``s``, ``bytes`` -> ``B``, ``occ``
  and ``#`` -> ``count``; other units as :func:`~cctviz.model.units.canonical`
  reads them; none when CUBE states none.
- Not read: metrics of non-scalar data types (``RATE``, ``TAU_ATOMIC``,
  ``COMPLEX``, ``NDOUBLES``, histograms; a warning names them), derived
  (CubePL) metrics (pycubexr refuses a file defining one) and the call sites
  (``line``/``mod`` attributes of a cnode: pycubexr does not parse them).
- Rows that are zero (or unmeasured) in every metric are left out of the
  long table.
- Safety: an ``anchor.xml`` that declares an XML entity is refused before it
  is parsed (CUBE never writes one).
"""

from __future__ import annotations

import gzip
import re
import struct
import tarfile
import warnings
import zlib
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import ParseError

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..model._algo import own_from_inclusive
from ..model.ensemble import Ensemble
from ..model.tree import Tree
from ..model.units import canonical
from . import register

INSTALL = "reading CUBE profiles needs the pycubexr package: pip install 'cctviz[scorep]'"
ANCHOR = "anchor.xml"
#: names of the members a CUBE archive starts with
_MEMBER = re.compile(rb"anchor\.xml|\d+\.(data|index)|remapping\.spec|.*\.cubepl")
#: CUBE data types holding one number per (cnode, location)
_SCALAR = {
    "CHAR",
    "DOUBLE",
    "FLOAT",
    "INT",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "INTEGER",
    "MAXDOUBLE",
    "MINDOUBLE",
    "SHORT INT",
    "SIGNED INT",
    "SIGNED INTEGER",
    "SIGNED SHORT INT",
    "UINT8",
    "UINT16",
    "UINT32",
    "UINT64",
    "UNSIGNED INT",
    "UNSIGNED INTEGER",
    "UNSIGNED SHORT INT",
}
_RULE = {"MINDOUBLE": "min", "MAXDOUBLE": "max"}
_COMM_ROLES = {
    "point2point",
    "all2all",
    "all2one",
    "one2all",
    "barrier",
    "other collective",
    "implicit barrier",
    "rma",
    "data transfer",
}
_REGION_PARADIGMS = {"user", "measurement", "openmp", "pthread", "opencl", "openacc"}
# what pycubexr (and the tarfile, zlib, struct and XML code under it) raises on a bad file
_PARSE_ERRORS = (
    AssertionError,
    ParseError,
    RecursionError,
    tarfile.TarError,
    zlib.error,
    struct.error,
    gzip.BadGzipFile,
    EOFError,
    KeyError,
    IndexError,
    ValueError,
    TypeError,
    AttributeError,
    OSError,
    UnicodeDecodeError,
)


def _sniff(path: Path, h: bytes) -> bool:
    """A tar archive (``ustar`` magic) named ``*.cubex`` or starting with a CUBE member."""
    if path.is_dir() or len(h) < 512 or h[257:262] != b"ustar":
        return False
    if path.suffix == ".cubex":
        return True
    return _MEMBER.fullmatch(h[:100].split(b"\0", 1)[0]) is not None


def _kind(paradigm: str, role: str) -> str:
    if paradigm == "mpi" and role in _COMM_ROLES:
        return "comm"
    if paradigm in _REGION_PARADIGMS or role in ("artificial", "user"):
        return "region"
    return "function"


def _check_anchor(path: Path) -> None:
    """Open the archive and refuse an ``anchor.xml`` that is missing or declares
    an entity (before any XML parser sees it)."""
    with open(path, "rb") as fh:
        first = fh.read(tarfile.BLOCKSIZE)
    if len(first) < tarfile.BLOCKSIZE or first[257:262] != b"ustar":
        raise ProfileError(path, "not a CUBE archive (no tar header)", where="byte 0")
    try:
        tf = tarfile.open(path)  # noqa: SIM115 - closed below
    except tarfile.ReadError:
        from pycubexr.utils.custom_tarinfo import TarInfoWithoutCheck

        try:  # CubeWriter 4.8 wrote wrong header checksums; pycubexr reads those too
            tf = tarfile.open(path, tarinfo=TarInfoWithoutCheck)  # noqa: SIM115
        except tarfile.TarError as e:
            raise ProfileError(path, f"not a CUBE archive (a tar file): {e}") from None
    try:
        with tf:
            try:
                member = tf.getmember(ANCHOR)
            except KeyError:
                raise ProfileError(path, f"no {ANCHOR} in the archive: not a CUBE file") from None
            f = tf.extractfile(member)
            if f is None:
                raise ProfileError(path, f"{ANCHOR} is not a file", where=ANCHOR)
            with f:
                head = f.read(1 << 16)
            tf.getmembers()  # to the end: the archive must close with two zero records
            if path.stat().st_size - tf.offset < 2 * tarfile.BLOCKSIZE:
                raise ProfileError(
                    path,
                    "the archive is cut short (no end-of-archive marker after the last member)",
                    where=f"byte {path.stat().st_size}",
                )
    except ProfileError:
        raise
    except (tarfile.TarError, OSError, EOFError, ValueError) as e:
        raise ProfileError(path, f"a damaged CUBE archive (tar file): {e}") from None
    if not head.startswith(b"<?xml"):
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 1 << 16)
        except zlib.error as e:
            raise ProfileError(
                path, f"{ANCHOR} is neither XML nor gzipped XML ({e})", where=ANCHOR
            ) from None
    prolog = head.split(b"<cube", 1)[0]
    k = prolog.find(b"<!ENTITY")
    if k >= 0:
        raise ProfileError(
            path,
            "the XML declares an entity; CUBE files never do, and cctviz does not expand entities",
            where=f"{ANCHOR}, byte {k}",
        )


def _cnodes(cube: Any) -> dict[str, Any]:
    """The call tree in document (pre-)order: cnode ids, parent positions, names, columns."""
    cid: list[int] = []
    parent: list[int] = []
    name: list[str] = []
    cols: dict[str, list[Any]] = {
        k: [] for k in ("file", "line", "module", "paradigm", "role", "mangled")
    }
    kinds: list[str] = []
    stack = [(c, -1) for c in reversed(cube.get_root_cnodes())]
    while stack:
        c, par = stack.pop()
        me = len(cid)
        reg = cube.get_region(c)
        cid.append(int(c.id))
        parent.append(par)
        nm = str(reg.name if reg.name is not None else reg.mangled_name)
        if c.parameters:
            nm += " [" + ", ".join(f"{k}={v}" for k, v in c.parameters.items()) + "]"
        name.append(nm)
        mod = reg.mod or None  # a source file, or a Score-P module name ("MPI", "OMP")
        is_file = mod is not None and ("/" in mod or "." in mod)
        cols["file"].append(mod if is_file else None)
        cols["module"].append(None if is_file else mod)
        cols["line"].append(max(int(reg.begin), 0))
        paradigm, role = reg.paradigm or "", reg.role or ""
        cols["paradigm"].append(paradigm)
        cols["role"].append(role)
        cols["mangled"].append(reg.mangled_name)
        kinds.append(_kind(paradigm, role))
        stack.extend((ch, me) for ch in reversed(c.get_children()))
    ids = np.asarray(cid, dtype=np.int64)
    if np.unique(ids).size != ids.size:
        raise ValueError("cnode ids are not unique")
    return {
        "cid": ids,
        "parent": np.asarray(parent, dtype=np.int64),
        "name": np.asarray(name, dtype=object),
        "kind": np.asarray(kinds, dtype=object),
        "columns": {**cols, "cnode": ids},
    }


def _locations(path: Path, cube: Any) -> pd.DataFrame:
    """One row per location, in the order of CUBE's location ids (the data's columns)."""
    rows: list[dict[str, Any]] = []

    def walk(stn: Any) -> None:
        for group in getattr(stn, "_location_group_children", []):
            rank = int(group.rank)
            for loc in group.all_locations():
                rows.append(
                    {
                        "rank": rank,
                        "thread": int(loc.rank),
                        "location": int(loc.id),
                        "location_type": loc.type,
                        "location_name": loc.name,
                        "host": stn.name,
                    }
                )
        for child in getattr(stn, "_system_tree_node_children", []):
            walk(child)

    for root in cube._anchor_result.system_tree_nodes:
        walk(root)
    prof = pd.DataFrame(
        rows, columns=["rank", "thread", "location", "location_type", "location_name", "host"]
    )
    if prof.empty:
        raise ProfileError(path, "the system tree has no location", where=f"{ANCHOR} <system>")
    ids = np.sort(prof["location"].to_numpy())
    if not np.array_equal(ids, np.arange(len(prof))):
        raise ProfileError(
            path,
            f"location ids should be 0..{len(prof) - 1} (one data column each), got {ids.tolist()[:10]}",
            where=f"{ANCHOR} <system>",
        )
    return prof.sort_values("location", kind="stable").reset_index(drop=True)


def _dense(path: Path, cube: Any, metric: Any, pos: np.ndarray, n_loc: int) -> np.ndarray | None:
    """(cnodes, locations) values of one metric as stored (float64), or None
    when the file has no data for it."""
    from pycubexr.utils.exceptions import MissingMetricError

    try:
        mv = cube.get_metric_values(metric, cache=False)
    except MissingMetricError:
        return None
    vals = mv.values
    vals = np.asarray(getattr(vals, "_values", vals))  # MinValues/MaxValues wrap an array
    rows_cid = np.fromiter(mv.cnode_indices.keys(), dtype=np.int64, count=len(mv.cnode_indices))
    rows_at = np.fromiter(mv.cnode_indices.values(), dtype=np.int64, count=len(mv.cnode_indices))
    where = f"{metric.id}.data"
    if vals.ndim != 1 or vals.size != rows_cid.size * n_loc:
        raise ProfileError(
            path,
            f"{vals.size} values for {rows_cid.size} call paths x {n_loc} locations",
            where=where,
        )
    out = np.zeros((pos.size, n_loc))
    k = np.minimum(np.searchsorted(pos, rows_cid), pos.size - 1)
    if not np.array_equal(pos[k], rows_cid):
        raise ProfileError(path, "the index names a cnode the call tree lacks", where=where)
    out[k] = vals.reshape(rows_cid.size, n_loc)[rows_at].astype(np.float64)
    if not np.isfinite(out).all():
        raise ProfileError(path, "a value is not finite", where=where)
    return out


@register("cube", _sniff, "CUBE4 profile (.cubex) from Score-P or Scalasca")
def read_cube(path: Path) -> Ensemble:
    """Read a CUBE4 ``.cubex`` profile into an Ensemble (one profile per location).

    Example:
        >>> import cctviz
        >>> ens = cctviz.read("../shared/data/scorep-cube/kripke.p8.d2.g32.r1/profile.cubex")
        >>> ens.n_profiles, ens.profiles["rank"].tolist(), len(ens.tree)
        (8, [0, 1, 2, 3, 4, 5, 6, 7], 14)
        >>> ens.tree.units["time"], ens.tree.units["visits"], ens.tree.aggregation["min_time"]
        ('s', 'count', 'min')
        >>> round(float(ens.stats("time (inc)").loc[0, "max"]), 3)  # the slowest rank's run time
        18.601
    """
    path = Path(path)
    try:
        from pycubexr import CubexParser
    except ImportError:
        raise ProfileError(path, INSTALL) from None
    _check_anchor(path)
    try:
        with CubexParser(path) as cube:
            return _read(path, cube)
    except ProfileError:
        raise
    except ParseError as e:
        line, col = e.position
        raise ProfileError(
            path,
            f"invalid XML: {str(e).split(':')[0]}",
            where=f"{ANCHOR}, line {line}, column {col}",
        ) from None
    except RecursionError:
        raise ProfileError(
            path, "the call tree is nested too deeply for pycubexr's recursive parser"
        ) from None
    except _PARSE_ERRORS as e:
        raise ProfileError(
            path, f"not a readable CUBE file ({type(e).__name__}: {e or 'failed check'})"
        ) from None


def _read(path: Path, cube: Any) -> Ensemble:
    s = _cnodes(cube)
    if s["cid"].size == 0:
        raise ProfileError(path, "the call tree is empty", where=f"{ANCHOR} <program>")
    prof = _locations(path, cube)
    L = len(prof)
    order = np.argsort(s["cid"], kind="stable")
    pos = s["cid"][order]  # sorted cnode ids; order[k] is the tree position of pos[k]
    parent = s["parent"]
    # --- metrics: every one of the metric tree, in its order
    metrics = cube.all_metrics()
    units: dict[str, str] = {}
    rules: dict[str, str] = {}
    parents: dict[str, str] = {}
    no_data: list[str] = []
    skipped: list[str] = []
    info: dict[str, dict[str, Any]] = {}
    values: dict[str, np.ndarray] = {}
    for m in metrics:
        for ch in m.childs:
            parents[ch.name] = m.name
    for m in metrics:
        dtype = (m.data_type or "").strip().upper()
        if dtype not in _SCALAR:
            skipped.append(f"{m.name} ({m.data_type})")
            continue
        if m.name in values:
            raise ProfileError(path, f"two metrics named {m.name!r}", where=f"{ANCHOR} <metrics>")
        rule = _RULE.get(dtype, "sum")
        rules[m.name] = rule
        u = (m.units or "").strip()
        unit = canonical(u)
        if unit:
            units[m.name] = unit
        info[m.name] = {
            "display_name": m.display_name,
            "description": m.description,
            "type": m.metric_type,
            "dtype": m.data_type,
            "uom": m.units,
        }
        d = _dense(path, cube, m, pos, L)
        if d is None:
            no_data.append(m.name)
            d = np.zeros((pos.size, L)) if rule == "sum" else np.full((pos.size, L), np.nan)
        else:
            d = d[np.argsort(order)]  # rows in tree position order
            if m.metric_type == "INCLUSIVE" and rule == "sum":
                d = own_from_inclusive(parent, d)
        values[m.name] = d
    if skipped:
        warnings.warn(
            f"{path}: CUBE metrics of a data type cctviz does not read were left out: "
            + ", ".join(skipped),
            stacklevel=3,
        )
    # a min/max CUBE stores as 0 where the location never visited the call path: not measured
    visits = values.get("visits")
    if visits is not None and "visits" not in no_data:
        unvisited = visits == 0
        for m, rule in rules.items():
            if rule != "sum":
                values[m] = np.where(unvisited & (values[m] == 0), np.nan, values[m])
    names = list(values)
    meta: dict[str, Any] = {
        "cube_version": cube._anchor_result.attrs.get("Cube Version"),
        "creator": cube._anchor_result.attrs.get("Creator"),
        "units": units,
        "aggregation": rules,
        "cube_metrics": info,
    }
    meta = {k: v for k, v in meta.items() if v is not None}
    if parents:
        meta["cube_metric_parent"] = parents
    if no_data:
        meta["cube_no_data"] = no_data
    structure, new_id = Tree.from_parents_with_ids(
        parent, s["name"], None, kind=s["kind"], columns=s["columns"], meta=meta
    )
    # --- long table: (node, profile) rows with any value
    stacked = np.stack([values[m] for m in names], axis=-1)  # (cnode position, location, metric)
    has = ((stacked != 0) & ~np.isnan(stacked)).any(axis=-1)
    cpos, loc = np.nonzero(has)
    rows = pd.DataFrame({"node": new_id[cpos], "profile": loc})
    for j, m in enumerate(names):
        rows[m] = stacked[cpos, loc, j]
    rows = rows.sort_values(["node", "profile"], kind="stable").reset_index(drop=True)
    return Ensemble(structure, rows, prof, meta)
