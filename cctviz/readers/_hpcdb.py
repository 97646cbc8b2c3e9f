"""Low-level parsing of HPCToolkit's v4 database files (``meta.db``, ``profile.db``,
``cct.db``), as documented in the database's ``FORMATS.md``.

Every structure is read with ``np.frombuffer`` over a memory map of the file, with
structured little-endian dtypes whose ``itemsize`` is the stride the file states
(the "expandable" structures may grow in later minor versions). Every pointer,
count and size is checked against the file and the section it must lie in before
it is followed; a failed check is a :class:`~cctviz.ProfileError` naming the file
and the section. :mod:`cctviz.readers.hpctoolkit_db` builds the tree from this.

>>> m = MetaDb(Path("../shared/data/pipit/ping-pong-hpctoolkit/meta.db"))
>>> m.title, len(m.contexts["ctx_id"]) > 0
('ping-pong', True)
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ProfileError

MAGIC = b"HPCTOOLKIT"
MAJOR = 4
HEADER = 0x10  # magic, format, versions; the (size, pointer) pairs follow


def _dt(fields: list[tuple[str, str, int]], itemsize: int) -> np.dtype:
    """A structured dtype with explicit offsets and stride ``itemsize``."""
    return np.dtype(
        {
            "names": [f[0] for f in fields],
            "formats": [f[1] for f in fields],
            "offsets": [f[2] for f in fields],
            "itemsize": itemsize,
        }
    )


def as_i64(values: Any) -> np.ndarray:
    """Unsigned 64-bit file values as int64; those past 2**63 (never a valid offset,
    size or count) become -1 so that range checks refuse them."""
    u = np.asarray(values).astype(np.uint64, copy=False).reshape(-1)
    v = u.view(np.int64)
    return np.where(v < 0, -1, v)


class DbFile:
    """One ``*.db`` file: memory-mapped, its header and sections checked.

    ``sections`` maps the section names given to ``(pointer, size)``.
    """

    def __init__(self, path: Path, fmt: bytes, footer: bytes, names: tuple[str, ...]) -> None:
        self.path = path
        try:
            size = os.path.getsize(path)
            with open(path, "rb") as f:
                mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        except OSError as e:
            raise ProfileError(path, f"cannot read the file: {e}") from None
        self.size = size
        self.buf = np.frombuffer(mm, dtype=np.uint8)
        need = HEADER + 16 * len(names)
        if size < need + len(footer):
            raise ProfileError(
                path, f"{size} bytes: too short for a {fmt.decode()} file header", "file header"
            )
        head = bytes(self.buf[:HEADER])
        if head[:10] != MAGIC:
            raise ProfileError(
                path, "not an HPCToolkit database file (no HPCTOOLKIT magic)", "byte 0"
            )
        if head[10:14] != fmt:
            raise ProfileError(
                path, f"format {head[10:14]!r} in the header, expected {fmt!r}", "byte 10"
            )
        self.major, self.minor = head[14], head[15]
        if self.major != MAJOR:
            raise ProfileError(
                path, f"major version {self.major}, only version {MAJOR} is supported", "byte 14"
            )
        if bytes(self.buf[size - len(footer) :]) != footer:
            raise ProfileError(
                path, f"the file does not end with {footer.decode()!r}: truncated?", "footer"
            )
        pairs = np.frombuffer(self.buf, dtype="<u8", count=2 * len(names), offset=HEADER)
        self.sections: dict[str, tuple[int, int]] = {}
        for k, name in enumerate(names):
            sz, p = int(pairs[2 * k]), int(pairs[2 * k + 1])
            if p > size or sz > size - p:
                raise ProfileError(
                    path,
                    f"section of {sz} bytes at {p} runs past the end of the file ({size} bytes)",
                    f"header, {name} section",
                )
            self.sections[name] = (p, sz)

    # ----------------------------------------------------------------- helpers
    def error(self, problem: str, where: str) -> ProfileError:
        return ProfileError(self.path, problem, where)

    def span(self, section: str) -> tuple[int, int]:
        p, sz = self.sections[section]
        return p, p + sz

    def records(
        self,
        offset: int,
        count: int,
        dtype: np.dtype,
        where: str,
        within: tuple[int, int] | None = None,
        align: int = 1,
    ) -> np.ndarray:
        """``count`` records of ``dtype`` at ``offset``, all inside ``within``
        (default: the file)."""
        lo, hi = within if within is not None else (0, self.size)
        offset, count = int(offset), int(count)
        if count < 0 or offset < lo or offset > hi or count * dtype.itemsize > hi - offset:
            raise self.error(
                f"{count} records of {dtype.itemsize} bytes at {offset} do not fit in "
                f"bytes {lo}..{hi}",
                where,
            )
        if count and offset % align:
            raise self.error(f"offset {offset} is not {align}-byte aligned", where)
        return np.frombuffer(self.buf, dtype=dtype, count=count, offset=offset)

    def header(self, section: str, fields: list[tuple[str, str, int]], size: int) -> np.void:
        """The header structure at the start of ``section`` (at least ``size`` bytes)."""
        lo, hi = self.span(section)
        return self.records(lo, 1, _dt(fields, size), f"{section} section header", (lo, hi))[0]

    def stride(self, value: int, minimum: int, what: str, where: str) -> int:
        value = int(value)
        if value < minimum:
            raise self.error(f"{what} is {value} bytes, at least {minimum} expected", where)
        return value

    def strings(self, ptrs: np.ndarray, within: tuple[int, int], where: str) -> list[str]:
        """NUL-terminated UTF-8 strings at ``ptrs``, each wholly inside ``within``."""
        ptrs = as_i64(ptrs)
        if ptrs.size == 0:
            return []
        lo, hi = within
        bad = (ptrs < lo) | (ptrs >= hi)
        if bad.any():
            p = int(ptrs[np.flatnonzero(bad)[0]])
            raise self.error(f"string pointer {p} outside bytes {lo}..{hi}", where)
        nul = lo + np.flatnonzero(self.buf[lo:hi] == 0)
        k = np.searchsorted(nul, ptrs)
        if (k >= nul.size).any():
            p = int(ptrs[np.flatnonzero(k >= nul.size)[0]])
            raise self.error(f"the string at {p} has no terminating NUL in bytes {lo}..{hi}", where)
        ends = nul[k]
        uniq, inv = np.unique(ptrs, return_inverse=True)
        ends_u = ends[np.unique(ptrs, return_index=True)[1]]
        out = []
        for p, e in zip(uniq.tolist(), ends_u.tolist()):
            try:
                out.append(bytes(self.buf[p:e]).decode("utf-8"))
            except UnicodeDecodeError:
                raise self.error(f"the string at {p} is not valid UTF-8", where) from None
        return [out[i] for i in inv.tolist()]

    def index_of(
        self, ptrs: np.ndarray, base: int, stride: int, count: int, what: str, where: str
    ) -> np.ndarray:
        """Indices of the elements of an array (``base``, ``stride``, ``count``) that
        non-zero ``ptrs`` point at; -1 for 0 (no element)."""
        ptrs = as_i64(ptrs)
        rel = ptrs - base
        ok = (ptrs == 0) | ((rel >= 0) & (rel % stride == 0) & (rel // stride < count))
        if not ok.all():
            p = int(ptrs[np.flatnonzero(~ok)[0]])
            raise self.error(f"pointer {p} is not one of the {count} {what}", where)
        return np.where(ptrs == 0, -1, rel // stride)


META_SECTIONS = (
    "General",
    "IdNames",
    "Metrics",
    "Context",
    "Strings",
    "Modules",
    "Files",
    "Functions",
)

# lexical types and relations of a context (meta.db Context Tree section)
FUNCTION, LOOP, LINE, INSTRUCTION = 0, 1, 2, 3
LEXICAL = {FUNCTION: "function", LOOP: "loop", LINE: "line", INSTRUCTION: "instruction"}
ENCLOSED, CALL, INLINED = 0, 1, 2
# scope types (meta.db Performance Metrics section)
SCOPE_CUSTOM, SCOPE_POINT, SCOPE_EXECUTION, SCOPE_TRANSITIVE = 0, 1, 2, 3
COMBINE = {0: "sum", 1: "min", 2: "max"}
#: szMetric of the meta.db written by HPCToolkit's development builds of January
#: to June 2022 (version 4.0 too; the released format's is 32)
PRERELEASE_SZ_METRIC = 0x18
#: szProfile of the same builds' profile.db (no flags; the released format's is 44)
PRERELEASE_SZ_PROFILE = 0x28
#: the propagation scope types of the released format, by the names the
#: pre-release format gives its scopes (custom: 0)
PRERELEASE_SCOPE_TYPES = {"point": 1, "execution": 2, "function": 3}
#: the entry point a pre-release top context stands for, by its function's name
PRERELEASE_ENTRIES = {"<program root>": 1, "<thread root>": 2}
#: the entry points' names (the released format's strings for them)
ENTRY_NAMES = {0: "unknown entry", 1: "main thread", 2: "application thread"}


class MetaDb(DbFile):
    """``meta.db``: names, metrics, modules, files, functions and the context tree.

    Attributes set: ``title``, ``description``, ``id_names`` (kind -> name),
    ``metrics`` (list of dicts: name, scopes {scope name: (type, propMetricId)},
    summaries [(scope name, formula, combine, statMetricId)]), ``modules``,
    ``files`` (paths), ``functions`` (dict of arrays: name, module, file, line,
    offset) and ``contexts`` (dict of arrays in discovery order: ctx_id,
    parent (row, -1 for entry points), entry (entry-point type or -1),
    relation, lexical, function, file, line, module, offset, propagation, name
    (entry points' pretty names, else None)).
    """

    def __init__(self, path: Path) -> None:
        super().__init__(path, b"meta", b"_meta.db", META_SECTIONS)
        # which layout: the pre-release one (early 2022 builds) says 4.0 as well,
        # and is told by its metric descriptions' size; every section reads by it
        sz_metric = self.header("Metrics", [("szM", "u1", 0xC)], 0xF)["szM"]
        self.prerelease = int(sz_metric) == PRERELEASE_SZ_METRIC
        self._general()
        self._id_names()
        self._metrics()
        self._modules_files_functions()
        self._contexts()

    def _general(self) -> None:
        h = self.header("General", [("title", "<u8", 0), ("desc", "<u8", 8)], 16)
        self.title, self.description = self.strings(
            [h["title"], h["desc"]], self.span("General"), "General section"
        )

    def _id_names(self) -> None:
        where = "IdNames section"
        h = self.header("IdNames", [("pp", "<u8", 0), ("n", "u1", 8)], 9)
        span = self.span("IdNames")
        ptrs = self.records(h["pp"], h["n"], np.dtype("<u8"), where, span, 8)
        self.id_names = dict(enumerate(self.strings(ptrs, span, where)))

    def _metrics(self) -> None:
        where = "Metrics section"
        span = self.span("Metrics")
        if self.prerelease:
            self._metrics_prerelease(where, span)
            return
        h = self.header(
            "Metrics",
            [
                ("p", "<u8", 0),
                ("n", "<u4", 8),
                ("szM", "u1", 0xC),
                ("szPSI", "u1", 0xD),
                ("szSS", "u1", 0xE),
                ("pS", "<u8", 0x10),
                ("nS", "<u2", 0x18),
                ("szS", "u1", 0x1A),
            ],
            0x1B,
        )
        szM = self.stride(h["szM"], 0x1C, "szMetric", where)
        szPSI = self.stride(h["szPSI"], 0x0A, "szScopeInst", where)
        szSS = self.stride(h["szSS"], 0x14, "szSummary", where)
        szS = self.stride(h["szS"], 0x0A, "szScope", where)
        scopes = self.records(
            h["pS"],
            h["nS"],
            _dt([("name", "<u8", 0), ("type", "u1", 8), ("bit", "u1", 9)], szS),
            f"{where}, scopes",
            span,
            8,
        )
        scope_names = self.strings(scopes["name"], span, f"{where}, scope names")
        sidx = {int(h["pS"]) + k * szS: k for k in range(len(scopes))}
        self.scopes = [
            {"name": n, "type": int(t), "bit": int(b)}
            for n, t, b in zip(scope_names, scopes["type"], scopes["bit"])
        ]
        mds = self.records(
            h["p"],
            h["n"],
            _dt(
                [
                    ("name", "<u8", 0),
                    ("pI", "<u8", 8),
                    ("pSum", "<u8", 0x10),
                    ("nI", "<u2", 0x18),
                    ("nSum", "<u2", 0x1A),
                ],
                szM,
            ),
            f"{where}, metric descriptions",
            span,
            8,
        )
        names = self.strings(mds["name"], span, f"{where}, metric names")
        dt_psi = _dt([("scope", "<u8", 0), ("id", "<u2", 8)], szPSI)
        dt_ss = _dt(
            [
                ("scope", "<u8", 0),
                ("formula", "<u8", 8),
                ("combine", "u1", 0x10),
                ("id", "<u2", 0x12),
            ],
            szSS,
        )
        self.metrics: list[dict[str, Any]] = []
        seen: set[int] = set()
        for k, name in enumerate(names):
            w = f"{where}, metric {name!r}"
            insts = self.records(mds["pI"][k], mds["nI"][k], dt_psi, w, span, 8)
            sums = self.records(mds["pSum"][k], mds["nSum"][k], dt_ss, w, span, 8)
            scopes_of: dict[str, tuple[int, int]] = {}
            for ps, mid in zip(insts["scope"].tolist(), insts["id"].tolist()):
                if ps not in sidx:
                    raise self.error(f"scope pointer {ps} is not one of the scopes", w)
                if mid in seen:
                    raise self.error(f"metric id {mid} is used twice", w)
                seen.add(mid)
                s = self.scopes[sidx[ps]]
                scopes_of[s["name"]] = (s["type"], mid)
            formulas = self.strings(sums["formula"], span, w)
            summaries = []
            for ps, f, c, mid in zip(
                sums["scope"].tolist(), formulas, sums["combine"].tolist(), sums["id"].tolist()
            ):
                if ps not in sidx:
                    raise self.error(f"scope pointer {ps} is not one of the scopes", w)
                summaries.append((self.scopes[sidx[ps]]["name"], f, COMBINE.get(c), mid))
            self.metrics.append({"name": name, "scopes": scopes_of, "summaries": summaries})

    def _metrics_prerelease(self, where: str, span: tuple[int, int]) -> None:
        """The Metrics section of HPCToolkit's development builds of January to
        June 2022 (meta.db 4.0 too, told apart by szMetric = 24): a metric's scopes
        are nested in it ({pName, nScopes, pScopes}), each scope names itself and
        holds its summaries ({pScope: its name, nSummaries, propMetricId,
        pSummaries}; a summary {pFormula, combine, statMetricId}); the scopes' types
        come from their names (point, function, execution; any other is custom)."""
        h = self.header(
            "Metrics",
            [("p", "<u8", 0), ("n", "<u4", 8), ("szM", "u1", 0xC), ("szS", "u1", 0xD),
             ("szSS", "u1", 0xE)],
            0xF,
        )  # fmt: skip
        szS = self.stride(h["szS"], 0x18, "szScope", where)
        szSS = self.stride(h["szSS"], 0x0C, "szSummary", where)
        mds = self.records(
            h["p"], h["n"], _dt([("name", "<u8", 0), ("nS", "<u2", 8), ("pS", "<u8", 0x10)], 0x18),
            f"{where}, metric descriptions", span, 8,
        )  # fmt: skip
        names = self.strings(mds["name"], span, f"{where}, metric names")
        dt_scope = _dt(
            [("name", "<u8", 0), ("nSum", "<u2", 8), ("id", "<u2", 0xA), ("pSum", "<u8", 0x10)], szS
        )
        dt_sum = _dt([("formula", "<u8", 0), ("combine", "u1", 8), ("id", "<u2", 0xA)], szSS)
        self.scopes, index = [], {}
        self.metrics = []
        seen: set[int] = set()
        for k, name in enumerate(names):  # a loop per metric and scope (a handful)
            w = f"{where}, metric {name!r}"
            scopes = self.records(mds["pS"][k], mds["nS"][k], dt_scope, w, span, 8)
            scope_names = self.strings(scopes["name"], span, w)
            scopes_of: dict[str, tuple[int, int]] = {}
            summaries = []
            for sname, mid, p_sum, n_sum in zip(
                scope_names, scopes["id"].tolist(), scopes["pSum"], scopes["nSum"]
            ):
                if sname not in index:
                    index[sname] = len(self.scopes)
                    self.scopes.append({"name": sname, "type": PRERELEASE_SCOPE_TYPES.get(sname, 0),
                                        "bit": 0})  # fmt: skip
                if mid in seen:
                    raise self.error(f"metric id {mid} is used twice", w)
                seen.add(mid)
                scopes_of[sname] = (self.scopes[index[sname]]["type"], mid)
                sums = self.records(p_sum, n_sum, dt_sum, w, span, 8)
                formulas = self.strings(sums["formula"], span, w)
                for f, c, sid in zip(formulas, sums["combine"].tolist(), sums["id"].tolist()):
                    summaries.append((sname, f, COMBINE.get(c), sid))
            self.metrics.append({"name": name, "scopes": scopes_of, "summaries": summaries})

    def _modules_files_functions(self) -> None:
        strings = self.span("Strings")
        hdr = [("p", "<u8", 0), ("n", "<u4", 8), ("sz", "<u2", 0xC)]
        # load modules
        w = "Modules section"
        h = self.header("Modules", hdr, 0xE)
        self.mod_base, self.mod_stride = int(h["p"]), self.stride(h["sz"], 0x10, "szModule", w)
        mods = self.records(
            h["p"], h["n"], _dt([("path", "<u8", 8)], self.mod_stride), w, self.span("Modules"), 8
        )
        self.modules = self.strings(mods["path"], strings, f"{w}, paths")
        # source files
        w = "Files section"
        h = self.header("Files", hdr, 0xE)
        self.file_base, self.file_stride = int(h["p"]), self.stride(h["sz"], 0x10, "szFile", w)
        files = self.records(
            h["p"], h["n"], _dt([("path", "<u8", 8)], self.file_stride), w, self.span("Files"), 8
        )
        self.files = self.strings(files["path"], strings, f"{w}, paths")
        # functions
        w = "Functions section"
        h = self.header("Functions", hdr, 0xE)
        self.fn_base, self.fn_stride = int(h["p"]), self.stride(h["sz"], 0x28, "szFunction", w)
        fns = self.records(
            h["p"],
            h["n"],
            _dt(
                [
                    ("name", "<u8", 0),
                    ("module", "<u8", 8),
                    ("offset", "<u8", 0x10),
                    ("file", "<u8", 0x18),
                    ("line", "<u4", 0x20),
                ],
                self.fn_stride,
            ),
            w,
            self.span("Functions"),
            8,
        )
        named = fns["name"] != 0
        fname = np.full(len(fns), None, dtype=object)
        fname[named] = self.strings(fns["name"][named], strings, f"{w}, names")
        self.functions = {
            "name": fname,
            "module": self.index_of(
                fns["module"], self.mod_base, self.mod_stride, len(self.modules), "load modules", w
            ),
            "file": self.index_of(
                fns["file"], self.file_base, self.file_stride, len(self.files), "source files", w
            ),
            "line": fns["line"].astype(np.int64),
            "offset": fns["offset"].astype(np.uint64),
        }

    def _contexts(self) -> None:
        """The context tree, read breadth-first with numpy over all open child arrays.

        Contexts have a variable size (``nFlexWords``), so the records of one child
        array are found one after another; all child arrays of the tree advance
        together, one record each per step (steps: the longest chain of first
        children and next siblings, not the number of contexts).
        """
        w = "Context section"
        lo, hi = self.span("Context")
        fields = [("szC", "<u8", 0), ("pC", "<u8", 8), ("id", "<u4", 0x10), ("entry", "<u2", 0x14),
                  ("name", "<u8", 0x18)]  # fmt: skip
        entry_names = None
        if self.prerelease:  # the top contexts' array {szRoots, pRoots}: one entry point
            h = self.header("Context", [("sz", "<u8", 0), ("p", "<u8", 8)], 0x10)
            entries = np.zeros(1, dtype=_dt(fields, 0x20))
            entries["szC"], entries["pC"] = h["sz"], h["p"]
            entries["entry"], entry_names = 1, ["main thread"]
        else:
            h = self.header("Context", [("p", "<u8", 0), ("n", "<u2", 8), ("sz", "u1", 0xA)], 0xB)
            sz = self.stride(h["sz"], 0x20, "szEntryPoint", w)
            entries = self.records(
                h["p"], h["n"], _dt(fields, sz), f"{w}, entry points", (lo, hi), 8
            )  # fmt: skip
        strings = self.span("Strings")
        words = np.frombuffer(self.buf, dtype="<u8", count=self.size // 8)
        cols: dict[str, list[np.ndarray]] = {
            k: []
            for k in (
                "ctx_id",
                "parent",
                "entry",
                "relation",
                "lexical",
                "function",
                "file",
                "line",
                "module",
                "offset",
                "propagation",
            )
        }
        names: list[Any] = []
        ne = len(entries)
        cols["ctx_id"].append(entries["id"].astype(np.int64))
        cols["parent"].append(np.full(ne, -1, dtype=np.int64))
        cols["entry"].append(entries["entry"].astype(np.int64))
        for k in ("relation", "lexical", "function", "file", "line", "module", "propagation"):
            cols[k].append(np.full(ne, -1, dtype=np.int64))
        cols["offset"].append(np.zeros(ne, dtype=np.uint64))
        names.extend(
            entry_names or self.strings(entries["name"], strings, f"{w}, entry point names")
        )
        # open child arrays: cursor, end, parent row
        cur, end, par = self._child_arrays(entries["pC"], entries["szC"], np.arange(ne), lo, hi, w)
        n = ne
        # a context's fixed part: the pre-release format has no propagation word
        fixed = 0x18 if self.prerelease else 0x20
        limit = (hi - lo) // fixed + ne  # more contexts than fit means a cycle
        while cur.size:
            if (cur + fixed > end).any():
                k = int(np.flatnonzero(cur + fixed > end)[0])
                raise self.error(
                    f"a context at {cur[k]} runs past the end of its child array ({end[k]})", w
                )
            q = cur // 8
            w2 = words[q + 2]
            nflex = (w2 >> np.uint64(56)).astype(np.int64)
            nxt = cur + fixed + 8 * nflex
            if (nxt > end).any():
                k = int(np.flatnonzero(nxt > end)[0])
                raise self.error(
                    f"the context at {cur[k]} ({nflex[k]} flex words) runs past the end of "
                    f"its child array ({end[k]})",
                    w,
                )
            flags = ((w2 >> np.uint64(32)) & np.uint64(0xFF)).astype(np.int64)
            has_f, has_s, has_p = flags & 1, (flags >> 1) & 1, (flags >> 2) & 1
            need = has_f + 2 * has_s + 2 * has_p
            if (need > nflex).any():
                k = int(np.flatnonzero(need > nflex)[0])
                raise self.error(
                    f"the context at {cur[k]} has flags {flags[k]:#x} but {nflex[k]} flex words", w
                )
            flex = q + fixed // 8
            iw_file = flex + has_f
            iw_mod = flex + has_f + 2 * has_s
            m = cur.size
            fn_ptr = np.where(has_f == 1, words[np.where(has_f == 1, flex, 0)], 0)
            file_ptr = np.where(has_s == 1, words[np.where(has_s == 1, iw_file, 0)], 0)
            line = np.where(
                has_s == 1, words[np.where(has_s == 1, iw_file + 1, 0)] & np.uint64(0xFFFFFFFF), 0
            )
            mod_ptr = np.where(has_p == 1, words[np.where(has_p == 1, iw_mod, 0)], 0)
            off = np.where(has_p == 1, words[np.where(has_p == 1, iw_mod + 1, 0)], 0)
            rows = np.arange(n, n + m)
            cols["ctx_id"].append((w2 & np.uint64(0xFFFFFFFF)).astype(np.int64))
            cols["parent"].append(par)
            cols["entry"].append(np.full(m, -1, dtype=np.int64))
            cols["relation"].append(((w2 >> np.uint64(40)) & np.uint64(0xFF)).astype(np.int64))
            cols["lexical"].append(((w2 >> np.uint64(48)) & np.uint64(0xFF)).astype(np.int64))
            cols["function"].append(
                self.index_of(
                    fn_ptr,
                    self.fn_base,
                    self.fn_stride,
                    len(self.functions["line"]),
                    "functions",
                    w,
                )
            )
            cols["file"].append(
                self.index_of(
                    file_ptr, self.file_base, self.file_stride, len(self.files), "source files", w
                )
            )
            cols["line"].append(line.astype(np.int64))
            cols["module"].append(
                self.index_of(
                    mod_ptr, self.mod_base, self.mod_stride, len(self.modules), "load modules", w
                )
            )
            cols["offset"].append(off.astype(np.uint64))
            propagation = (
                words[q + 3] & np.uint64(0xFFFF) if not self.prerelease else np.zeros(m, np.uint64)
            )
            cols["propagation"].append(propagation.astype(np.int64))
            names.extend([None] * m)
            n += m
            if n > limit:
                raise self.error("the context tree has a cycle (more contexts than fit)", w)
            c2, e2, p2 = self._child_arrays(words[q + 1], words[q], rows, lo, hi, w)
            more = nxt < end
            cur = np.concatenate([nxt[more], c2])
            end = np.concatenate([end[more], e2])
            par = np.concatenate([par[more], p2])
        self.contexts = {k: np.concatenate(v) for k, v in cols.items()}
        self.contexts["name"] = np.asarray(names, dtype=object)
        if self.prerelease:
            self._prerelease_entries()
        ids = self.contexts["ctx_id"]
        low = 0 if self.prerelease else 1  # the pre-release's entry point is the root, id 0
        if ids.size and (ids.min() < low or np.unique(ids).size != ids.size):
            what = "a context id is 0" if ids.min() < low else "context ids are not unique"
            raise self.error(what, w)

    def _prerelease_entries(self) -> None:
        """The pre-release format's top contexts as the released format's entry
        points: ``<program root>`` is the main thread's, ``<thread root>`` an
        application thread's, any other (partial call paths) unknown; the root that
        held them (context 0, the whole program) goes."""
        c = self.contexts
        top = c["parent"] == 0
        fn = c["function"][top]
        fname = np.where(fn >= 0, self.functions["name"][np.maximum(fn, 0)], None)
        kind = np.asarray([PRERELEASE_ENTRIES.get(n, 0) for n in fname], dtype=np.int64)
        c["entry"][top] = kind
        c["name"][top] = np.asarray([ENTRY_NAMES[k] for k in kind], dtype=object)
        for k in ("function", "file", "line", "module", "relation", "lexical"):
            c[k][top] = -1
        keep = np.arange(1, c["parent"].size)  # row 0: the synthetic root
        parent = c["parent"][keep]
        self.contexts = {k: v[keep] for k, v in c.items()}
        self.contexts["parent"] = np.where(parent > 0, parent - 1, -1)

    def _child_arrays(
        self, p: np.ndarray, sz: np.ndarray, rows: np.ndarray, lo: int, hi: int, w: str
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        p, sz = as_i64(p), as_i64(sz)  # past 2**63: -1, refused below
        has = sz != 0
        bad = has & ((p < lo) | (p > hi) | (sz < 0) | (sz > hi - p) | (p % 8 != 0))
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise self.error(
                f"a child array of {sz[k]} bytes at {p[k]} is not inside the section "
                f"(bytes {lo}..{hi}) or not aligned",
                w,
            )
        return p[has], p[has] + sz[has], np.asarray(rows, dtype=np.int64)[has]


PROFILE_SECTIONS = ("ProfileInfos", "IdTuples")
# sparse value blocks (profile.db: metric-value pairs indexed by context)
PSVB = [("nValues", "<u8", 0), ("pValues", "<u8", 8), ("nIdx", "<u4", 0x10), ("pIdx", "<u8", 0x18)]
PROF_VAL = np.dtype([("metric", "<u2"), ("value", "<f8")])  # 10 bytes, packed
PROF_IDX = np.dtype([("ctx", "<u4"), ("start", "<u8")])  # 12 bytes, packed


class ProfileDb(DbFile):
    """``profile.db``: one sparse (context, metric) -> value block per profile.

    Attributes: ``info`` (structured array: nValues, pValues, nIdx, pIdx,
    pIdTuple, flags), ``is_summary``, ``id_tuples`` (one list of (kind,
    flags, logicalId, physicalId) per profile; [] for the canonical summary).
    :meth:`values` gives the (ctx, metric, value) triples of one profile.
    """

    def __init__(self, path: Path) -> None:
        super().__init__(path, b"prof", b"_prof.db", PROFILE_SECTIONS)
        w = "ProfileInfos section"
        h = self.header("ProfileInfos", [("p", "<u8", 0), ("n", "<u4", 8), ("sz", "u1", 0xC)], 0xD)
        # the pre-release format (HPCToolkit's builds of early 2022) has no flags: a
        # profile without an identifier tuple is the summary
        prerelease = int(h["sz"]) == PRERELEASE_SZ_PROFILE
        sz = self.stride(h["sz"], PRERELEASE_SZ_PROFILE if prerelease else 0x2C, "szProfile", w)
        fields = (
            PSVB + [("pIdTuple", "<u8", 0x20)] + ([] if prerelease else [("flags", "<u4", 0x28)])
        )
        self.info = self.records(h["p"], h["n"], _dt(fields, sz), w, self.span("ProfileInfos"), 8)
        if len(self.info) == 0:
            raise self.error("no profiles (not even the summary profile)", w)
        if prerelease:
            self.is_summary = self.info["pIdTuple"] == 0
        else:
            self.is_summary = (self.info["flags"] & 1).astype(bool)
        if not self.is_summary[0]:
            raise self.error("the first profile is not the summary profile", w)
        self.id_tuples = self._id_tuples()

    def _id_tuples(self) -> list[list[tuple[int, int, int, int]]]:
        w = "IdTuples section"
        span = self.span("IdTuples")
        id_dt = np.dtype(
            [
                ("kind", "u1"),
                ("pad", "u1"),
                ("flags", "<u2"),
                ("logical", "<u4"),
                ("physical", "<u8"),
            ]
        )
        out = []
        for k, p in enumerate(self.info["pIdTuple"].tolist()):
            if p == 0:
                if k != 0 and not self.is_summary[k]:
                    raise self.error(f"profile {k} has no identifier tuple", w)
                out.append([])
                continue
            n = int(self.records(p, 1, np.dtype("<u2"), f"{w}, profile {k}", span, 8)[0])
            ids = self.records(p + 8, n, id_dt, f"{w}, profile {k}", span, 8)
            out.append(
                list(
                    zip(
                        ids["kind"].tolist(),
                        ids["flags"].tolist(),
                        ids["logical"].tolist(),
                        ids["physical"].tolist(),
                    )
                )
            )
        return out

    def values(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ctx id, metric id, value) of every non-zero value of profile ``k``."""
        return sparse_block(self, self.info[k], PROF_VAL, PROF_IDX, "ctx", "metric", f"profile {k}")


def sparse_block(
    db: DbFile,
    hdr: np.void,
    val_dt: np.dtype,
    idx_dt: np.dtype,
    idx_key: str,
    val_key: str,
    where: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Expand one sparse value block: (index key, value key, value) per value.

    The index array gives, for each key (a context in profile.db, a metric in
    cct.db), where its run of values starts; runs must be in order and cover the
    values.
    """
    nv, ni = int(hdr["nValues"]), int(hdr["nIdx"])
    vals = db.records(hdr["pValues"], nv, val_dt, f"{where}, values")
    idx = db.records(hdr["pIdx"], ni, idx_dt, f"{where}, index")
    start = as_i64(idx["start"])  # past 2**63: -1, refused below
    if ni and (start[0] != 0 or (np.diff(start) < 0).any() or start[-1] > nv or start.min() < 0):
        raise db.error(f"the index's start positions are not in order within 0..{nv}", where)
    if ni == 0 and nv:
        raise db.error(f"{nv} values but an empty index", where)
    keys = idx[idx_key].astype(np.int64)
    if ni > 1 and (np.diff(keys) <= 0).any():
        raise db.error(f"the index's {idx_key} ids are not sorted and unique", where)
    counts = np.diff(np.append(start, nv))
    return np.repeat(keys, counts), vals[val_key].astype(np.int64), vals["value"].astype(np.float64)


CCT_VAL = np.dtype([("prof", "<u4"), ("value", "<f8")])  # 12 bytes, packed
CCT_IDX = np.dtype([("metric", "<u2"), ("start", "<u8")])  # 10 bytes, packed


class CctDb(DbFile):
    """``cct.db``: one sparse (metric, profile) -> value block per context.

    The reader uses it only to check it agrees with ``meta.db`` (a block per
    context id, all inside the file); :meth:`values` expands one context's block.
    """

    def __init__(self, path: Path) -> None:
        super().__init__(path, b"ctxt", b"__ctx.db", ("CtxInfos",))
        w = "CtxInfos section"
        h = self.header("CtxInfos", [("p", "<u8", 0), ("n", "<u4", 8), ("sz", "u1", 0xC)], 0xD)
        sz = self.stride(h["sz"], 0x20, "szCtx", w)
        self.info = self.records(
            h["p"],
            h["n"],
            _dt(
                [
                    ("nValues", "<u8", 0),
                    ("pValues", "<u8", 8),
                    ("nIdx", "<u2", 0x10),
                    ("pIdx", "<u8", 0x18),
                ],
                sz,
            ),
            w,
            self.span("CtxInfos"),
            8,
        )
        nv = self.info["nValues"].astype(np.float64)  # float: no wrap past 2**63
        pv = self.info["pValues"].astype(np.float64)
        ni = self.info["nIdx"].astype(np.float64)
        pi = self.info["pIdx"].astype(np.float64)
        bad = ((nv > 0) & (pv + 12 * nv > self.size)) | ((ni > 0) & (pi + 10 * ni > self.size))
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise self.error(f"the values of context {k} run past the end of the file", w)

    def values(self, ctx: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(metric id, profile index, value) of every non-zero value of context ``ctx``."""
        return sparse_block(
            self, self.info[ctx], CCT_VAL, CCT_IDX, "metric", "prof", f"context {ctx}"
        )
