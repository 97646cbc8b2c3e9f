"""HPCToolkit databases in the 2022+ form (``meta.db``, ``profile.db``, ``cct.db``).

:func:`read_hpctoolkit_db` takes the database folder (or one of its ``*.db``
files) and returns an :class:`~cctviz.Ensemble` with one profile per
application thread listed in ``profile.db`` (``ens.profiles``: ``rank``,
``thread`` and the other identifiers of HPCToolkit's identifier tuples,
lower-cased: ``node``, ``core``, ``gpustream``...). ``trace.db`` is not read.
The binary layout is the one ``FORMATS.md`` in the database documents; the
parsing (memory-mapped, numpy structured dtypes, every pointer checked) is in
:mod:`cctviz.readers._hpcdb`.

Choices, so that the tree compares with the one the ``experiment.xml`` reader
(:mod:`cctviz.readers.hpctoolkit`) gives for the same program:

- Entry points ("main thread", ...) are the roots. Function contexts are
  ``function`` nodes, named ``"L:name"`` when called from source line ``L``;
  loops are ``"Loop@file.c:L"`` (``loop``). A source-line or instruction context
  through which a call passes (a call site) is not a node: its children hang
  from the enclosing function or loop, as the old format's ``C`` elements do. A
  line that carries cost of its own is a ``statement`` node ``"file.c:L"``
  (instructions: ``"module+0xOFF"``). Columns ``file``, ``line``, ``module``,
  ``ctx_id`` (the database's context id) and ``relation`` (``call``,
  ``inlined``, ``lexical``).
- Metrics: each ``meta.db`` metric becomes one exclusive column (``CPUTIME
  (sec)`` -> ``time``, unit ``s`` in ``meta["units"]``, as the old reader names
  them), derived from its ``execution``-scope values (HPCToolkit's inclusive
  cost): a node's own value is its inclusive value minus its listed
  children's, so ``"time (inc)"`` equals HPCToolkit's inclusive value on every
  node. hpcprof puts the ``point``-scope (raw) values mostly on instruction
  contexts that ``meta.db`` does not list; the derivation attributes them to the
  nearest listed context. A metric without an execution scope uses its point
  values on listed contexts. All propagated values are sums (aggregation rule
  ``sum``). Checked per profile: the tree's total equals the profile's value at
  the global context (ctx 0), and equals the sum of its point values.
- The summary profile (profile 0) is not a profile of the ensemble: its values at
  the global context go to ``meta["summary"]`` (``{"time (inc)": {"sum": ...,
  "min": ..., "max": ...}}``, HPCToolkit's statistics over all threads).
- ``cct.db`` holds the same values by context; it is checked (header, one block
  per context, all inside the file), the values are read from ``profile.db``.

Example:
    >>> import cctviz
    >>> ens = cctviz.read("../shared/data/pipit/ping-pong-hpctoolkit")
    >>> ens.meta["format"], ens.profiles["rank"].tolist(), ens.tree.units
    ('hpctoolkit-db', [0, 1], {'time': 's'})
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..model._algo import own_from_inclusive
from ..model.ensemble import Ensemble
from ..model.tree import Tree
from . import register
from ._hpcdb import (
    CALL,
    FUNCTION,
    INLINED,
    INSTRUCTION,
    LINE,
    LOOP,
    SCOPE_EXECUTION,
    SCOPE_POINT,
    CctDb,
    MetaDb,
    ProfileDb,
)
from ._hpctoolkit import metric_name

FILES = {"meta.db": b"meta", "profile.db": b"prof", "cct.db": b"ctxt"}
RELATION = {0: "lexical", CALL: "call", INLINED: "inlined"}
# relative tolerance of the consistency checks (values are sums of float64 samples)
RTOL = 1e-6


def _folder(path: Path) -> Path:
    return path.parent if path.is_file() else path


def _sniff(path: Path, h: bytes) -> bool:
    if path.is_dir():
        return (path / "meta.db").is_file() and (path / "profile.db").is_file()
    fmt = FILES.get(path.name)
    return fmt is not None and h[:14] == b"HPCTOOLKIT" + fmt


@register(
    "hpctoolkit-db",
    _sniff,
    "HPCToolkit database, 2022+ form (meta.db + profile.db + cct.db)",
    folder=True,
)
def read_hpctoolkit_db(path: Path) -> Ensemble:
    """Read an HPCToolkit (2022+) database folder into an Ensemble.

    ``path``: the folder, or its ``meta.db``/``profile.db``/``cct.db``. One
    profile per application thread (the summary profile goes to
    ``meta["summary"]``); see the module docstring for the tree and metrics.

    Example:
        >>> import cctviz
        >>> ens = cctviz.read("../shared/data/pipit/ping-pong-hpctoolkit")
        >>> ens.n_profiles, round(ens.meta["summary"]["time (inc)"]["sum"], 6)  # s, both ranks
        (2, 0.26207)
    """
    folder = _folder(Path(path))
    for f in ("meta.db", "profile.db"):
        if not (folder / f).is_file():
            raise ProfileError(folder, f"no {f} in the database folder")
    meta_db = MetaDb(folder / "meta.db")
    prof_db = ProfileDb(folder / "profile.db")
    ctx = meta_db.contexts
    ids = ctx["ctx_id"]
    if (folder / "cct.db").is_file():
        cct = CctDb(folder / "cct.db")
        if ids.size and len(cct.info) <= int(ids.max()):
            raise cct.error(
                f"{len(cct.info)} context blocks, but meta.db has context id {int(ids.max())}",
                "CtxInfos section",
            )
    # ------------------------------------------------------------ metrics
    specs = []  # (column, propagated metric id, is it inclusive, point-scope id)
    stat_ids: dict[str, dict[str, int]] = {}
    units: dict[str, str] = {}
    taken: set[str] = set()
    for m in meta_db.metrics:
        base, unit, _rule = metric_name(m["name"])
        col, k = base, 2
        while col in taken:  # "time" taken, or a name twice: keep both
            col, k = f"{m['name']}" if k == 2 else f"{m['name']} #{k}", k + 1
        taken.add(col)
        by_type = {t: mid for t, mid in m["scopes"].values()}
        point = by_type.get(SCOPE_POINT)
        if SCOPE_EXECUTION in by_type:
            specs.append((col, by_type[SCOPE_EXECUTION], True, point))
        elif point is not None:
            specs.append((col, point, False, point))
        else:
            continue  # only custom/function scopes: no additive form cctviz can use
        if unit:
            units[col] = unit
        exec_name = next((n for n, (t, _) in m["scopes"].items() if t == SCOPE_EXECUTION), None)
        stat_ids[col + " (inc)"] = {
            comb: mid
            for scope, formula, comb, mid in m["summaries"]
            if scope == exec_name and formula == "$$" and comb is not None
        }
    if not specs:
        raise ProfileError(
            folder / "meta.db", "no metric with a point or execution scope", "Metrics section"
        )
    # ------------------------------------------------------------ values per profile
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    parent = ctx["parent"]
    rows_p: list[np.ndarray] = []
    rows_n: list[np.ndarray] = []
    rows_v: list[np.ndarray] = []
    prof_rows: list[dict[str, Any]] = []
    n_nodes = ids.size
    is_root = parent < 0
    summary: dict[str, dict[str, float]] = {}
    for k in range(len(prof_db.info)):
        where = f"profile {k}"
        c, mid, v = prof_db.values(k)
        if not np.isfinite(v).all():
            raise prof_db.error("a value is not finite", where)
        if prof_db.is_summary[k]:
            if k == 0:
                at0 = c == 0
                for col, stats in stat_ids.items():
                    summary[col] = {
                        comb: float(v[at0 & (mid == s)].sum()) for comb, s in stats.items()
                    }
            continue
        p = len(prof_rows)
        prof_rows.append(_identifiers(meta_db, prof_db.id_tuples[k]))
        pos = np.searchsorted(sorted_ids, c)
        listed = (pos < sorted_ids.size) & (sorted_ids[np.minimum(pos, sorted_ids.size - 1)] == c)
        node = np.where(listed, order[np.minimum(pos, sorted_ids.size - 1)], -1)
        vals = np.zeros((n_nodes, len(specs)))
        for j, (col, metric_id, inclusive, point) in enumerate(specs):
            of_metric = mid == metric_id
            sel = of_metric & listed
            vals[:, j] = np.bincount(node[sel], weights=v[sel], minlength=n_nodes)
            total = float(v[of_metric & (c == 0)].sum())
            if inclusive:
                inc = vals[:, j].copy()
                vals[:, j] = own_from_inclusive(parent, inc)
                roots_total = float(inc[is_root].sum())
                _agree(
                    prof_db,
                    roots_total,
                    total,
                    f"{where}: {col}, the entry points' inclusive sum",
                    where,
                )
                # (HPCToolkit's early-2022 builds store point values for some contexts
                # only, or none: their sum is no check there)
                if point is not None and not meta_db.prerelease:
                    pt = float(v[mid == point].sum())
                    _agree(prof_db, pt, total, f"{where}: {col}, the sum of point values", where)
        nz = np.flatnonzero((vals != 0).any(axis=1))
        rows_p.append(np.full(nz.size, p, dtype=np.int64))
        rows_n.append(nz)
        rows_v.append(vals[nz])
    if not prof_rows:
        raise prof_db.error(
            "no application-thread profile (only summaries)", "ProfileInfos section"
        )
    node_idx = np.concatenate(rows_n)
    prof_idx = np.concatenate(rows_p)
    values = np.concatenate(rows_v) if rows_v else np.zeros((0, len(specs)))
    # ------------------------------------------------------------ tree structure
    scale = max(np.abs(values).max(initial=0.0), 1e-300)
    own = np.zeros(n_nodes, dtype=bool)
    own[node_idx[(np.abs(values) > RTOL * scale).any(axis=1)]] = True
    s = _structure(meta_db, own)
    keep = s["keep"]
    kept_anc = s["kept_ancestor"]  # own row if kept, else the enclosing function or loop
    local = np.full(n_nodes, -1, dtype=np.int64)
    idx = np.flatnonzero(keep)
    local[idx] = np.arange(idx.size)
    kp = s["container"][np.maximum(parent[idx], 0)]
    tree_parent = np.where(parent[idx] >= 0, local[np.maximum(kp, 0)], -1)
    names = [c for c, *_ in specs]
    tmeta: dict[str, Any] = {
        "title": meta_db.title,
        "hpctoolkit_db_version": f"{meta_db.major}.{meta_db.minor}",
        # HPCToolkit's development builds of January to June 2022 wrote 4.0 files
        # of another layout (metrics, contexts, profile infos): read too
        "hpctoolkit_db_prerelease": bool(meta_db.prerelease),
        "aggregation": {c: "sum" for c in names},
        "summary": summary,
    }
    if units:
        tmeta["units"] = units
    structure, new_id = Tree.from_parents_with_ids(
        tree_parent,
        s["names"][idx],
        None,
        kind=s["kind"][idx],
        columns={k: v[idx] for k, v in s["columns"].items()},
        meta=tmeta,
    )
    # move the values of dropped contexts (call sites) to their kept ancestor
    target = kept_anc[node_idx]
    if (target < 0).any():  # a dropped context without a kept ancestor: cannot happen (roots kept)
        raise ProfileError(
            folder / "meta.db", "a context without an enclosing node", "Context section"
        )
    rows = pd.DataFrame({"node": new_id[local[target]], "profile": prof_idx})
    for j, col in enumerate(names):
        rows[col] = values[:, j]
    rows = rows.groupby(["node", "profile"], as_index=False, sort=True).sum()
    profiles = pd.DataFrame(prof_rows)
    for c in ("rank", "thread"):
        if c not in profiles:
            profiles[c] = 0
    for c in ("rank", "thread"):
        profiles[c] = profiles[c].fillna(-1).astype(np.int64)
    sort = np.lexsort((profiles["thread"].to_numpy(), profiles["rank"].to_numpy()))
    renum = np.empty(len(sort), dtype=np.int64)
    renum[sort] = np.arange(len(sort))
    rows["profile"] = renum[rows["profile"].to_numpy()]
    profiles = profiles.iloc[sort].reset_index(drop=True)
    lead = [c for c in ("rank", "thread") if c in profiles]
    profiles = profiles[lead + [c for c in profiles.columns if c not in lead]]
    return Ensemble(structure, rows, profiles, tmeta)


def _agree(db: ProfileDb, got: float, want: float, what: str, where: str) -> None:
    if abs(got - want) > RTOL * max(abs(want), abs(got)) + 1e-12:
        raise db.error(f"{what} is {got!r}, the global context says {want!r}", where)


def _identifiers(meta_db: MetaDb, tup: list[tuple[int, int, int, int]]) -> dict[str, int]:
    """A profile's identifier tuple as {kind name (lower case): id}; the physical id
    where the kind is physical (a node's host id), else the logical id."""
    out: dict[str, int] = {}
    for kind, flags, logical, physical in tup:
        name = meta_db.id_names.get(kind, f"kind{kind}").lower()
        out[name] = physical if flags & 1 else logical
    return out


def _structure(m: MetaDb, own: np.ndarray) -> dict[str, Any]:
    """Which contexts are nodes, their names, kinds and columns.

    ``own``: whether a context has a non-zero own value in some profile. Lines and
    instructions with children and no own value are call sites: not nodes.
    """
    c = m.contexts
    n = c["ctx_id"].size
    parent, lex = c["parent"], c["lexical"]
    entry = c["entry"] >= 0
    has_child = np.zeros(n, dtype=bool)
    has_child[parent[parent >= 0]] = True
    site = ((lex == LINE) | (lex == INSTRUCTION)) & ~entry
    keep = ~(site & has_child & ~own)
    # nearest enclosing function, loop or entry point (ancestor-or-self), by pointer
    # jumping over call sites: what a context's children hang from
    container = ~site
    anc = np.where(container, np.arange(n), parent)
    while True:
        bad = (anc >= 0) & ~container[np.maximum(anc, 0)]
        if not bad.any():
            break
        anc = np.where(bad, parent[np.maximum(anc, 0)], anc)
    anc_c = anc
    anc = np.where(keep, np.arange(n), anc)  # kept lines keep their own values
    # names
    fn = c["function"]
    fnames = m.functions["name"]
    fmods = m.functions["module"]
    files = np.asarray([*m.files, None], dtype=object)  # index -1 -> None
    mods = np.asarray([*m.modules, None], dtype=object)
    line = c["line"]
    call_line = np.where(parent >= 0, line[np.maximum(parent, 0)], 0)
    call_from_site = (parent >= 0) & np.isin(lex[np.maximum(parent, 0)], (LINE, INSTRUCTION))
    file = files[c["file"]]
    # functions: their names (an unnamed one: "<unknown procedure> 0xOFF [module]")
    nf = len(fnames)
    fmod_base = pd.Series(
        [os.path.basename(x) if x else "?" for x in mods[fmods]] if nf else [], dtype=object
    )
    fname = pd.Series(fnames, dtype=object)
    unnamed = fname.isna()
    if unnamed.any():
        offs = pd.Series(m.functions["offset"]).map(lambda o: f"{int(o):x}")
        fname[unnamed] = "<unknown procedure> 0x" + offs[unnamed] + " [" + fmod_base[unnamed] + "]"
    fn_file = files[m.functions["file"]]
    fn_mod = mods[fmods]
    names = pd.Series(np.full(n, "", dtype=object))
    kind = np.full(n, "statement", dtype=object)
    module = np.full(n, None, dtype=object)
    base_file = pd.Series(file, dtype=object).map(
        lambda x: os.path.basename(x) if x else "<unknown file>"
    )
    line_s = pd.Series(line).astype(str)
    is_fn = (lex == FUNCTION) & ~entry
    has_fn = is_fn & (fn >= 0)
    fidx = np.maximum(fn, 0)
    fn_names = pd.Series(
        np.where(has_fn, fname.to_numpy()[fidx] if nf else None, "<unknown procedure>")
    )
    prefix = is_fn & call_from_site & (call_line > 0)
    fn_names[prefix] = pd.Series(call_line).astype(str)[prefix] + ":" + fn_names[prefix]
    names[is_fn] = fn_names[is_fn]
    kind[is_fn] = "function"
    if nf:
        module[has_fn] = fn_mod[fidx[has_fn]]
        fill = has_fn & pd.isna(file)
        file[fill] = fn_file[fidx[fill]]
    loop = (lex == LOOP) & ~entry
    names[loop] = "Loop@" + base_file[loop] + ":" + line_s[loop]
    kind[loop] = "loop"
    stmt = (lex == LINE) & ~entry
    names[stmt] = base_file[stmt] + ":" + line_s[stmt]
    other = ~(is_fn | loop | stmt | entry)  # instructions (or lexical types not known here)
    if other.any():
        mi = c["module"]
        mbase = pd.Series(
            [os.path.basename(mods[k]) if k >= 0 else "<unknown module>" for k in mi[other]],
            dtype=object,
        )
        offs = pd.Series([f"{int(o):x}" for o in c["offset"][other]], dtype=object)
        names[other] = (mbase + "+0x" + offs).to_numpy()
        module[other] = mods[mi[other]]
    names[entry] = c["name"][entry]
    kind[entry] = "function"
    names = names.to_numpy(dtype=object)
    relation = np.array(
        [RELATION.get(int(r), "entry" if r < 0 else str(r)) for r in c["relation"]], dtype=object
    )
    return {
        "keep": keep,
        "kept_ancestor": anc,
        "container": np.where(container, np.arange(n), anc_c),
        "names": names,
        "kind": kind,
        "columns": {
            "file": file,
            "line": line,
            "module": module,
            "ctx_id": c["ctx_id"],
            "relation": relation,
        },
    }
