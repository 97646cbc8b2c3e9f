"""A small mutation fuzzer over real samples, shared by the reader tests.

Every reader must turn bad input into a :class:`cctviz.ProfileError` that names
the file: never a bare ``KeyError``/``IndexError``/``struct.error``, never a
hang. :func:`fuzz_sample` writes mutants of a real sample (a file, or one file
inside a copy of a database folder) and reads each back:

- ``truncate``: the first k bytes (k < size);
- ``garbage``: a span overwritten with random bytes;
- ``delete``/``duplicate``: a span removed or repeated;
- ``digit``: a digit replaced by a letter or a sign (breaks numbers, ids, sizes).

Gzipped samples are mutated after decompression and compressed again (mutating
the compressed bytes only ever tests the gzip checksum).

Usage in a reader's test module::

    from tests.readers.fuzz import fuzz_sample

    def test_bad_input(tmp_path):
        stats = fuzz_sample(SAMPLE, "my-format", tmp_path, n=60)
        assert stats["truncate:error"] > 0
"""

from __future__ import annotations

import gzip
import random
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import cctviz
from cctviz import ProfileError

KINDS = ("truncate", "garbage", "delete", "duplicate", "digit")


def mutate(data: bytes, kind: str, rng: random.Random) -> bytes:
    """One mutant of ``data`` of the given kind (see the module docstring)."""
    size = len(data)
    if size == 0:
        return b"x"
    pos = rng.randrange(size)
    span = rng.randint(1, 64)
    if kind == "truncate":
        return data[: rng.randrange(size)]
    if kind == "garbage":
        return data[:pos] + rng.randbytes(span) + data[pos + span :]
    if kind == "delete":
        return data[:pos] + data[pos + span :]
    if kind == "duplicate":
        return data[: pos + span] + data[pos : pos + span] + data[pos + span :]
    for _ in range(1000):  # digit: find one near a random place
        i = rng.randrange(size)
        if 48 <= data[i] <= 57:
            return data[:i] + rng.choice([b"x", b"-", b"9999999999", b"."]) + data[i + 1 :]
    return data[:pos] + b"x" + data[pos + 1 :]


def mutants(data: bytes, n: int, seed: int = 0) -> Iterator[tuple[str, bytes]]:
    """``n`` (kind, mutated bytes) pairs of ``data``, reproducibly from ``seed``."""
    rng = random.Random(seed)
    for k in range(n):
        kind = KINDS[k % len(KINDS)]
        yield kind, mutate(data, kind, rng)


def outcome(path: Path, fmt: str | None) -> str:
    """``"ok"`` if ``path`` reads as a Tree/Ensemble, ``"error"`` for a ProfileError
    naming ``path``; any other exception propagates and fails the calling test."""
    try:
        obj = cctviz.read(path, format=fmt)
    except ProfileError as e:
        assert e.path is not None, f"ProfileError without a file: {e}"
        assert str(e).startswith(str(e.path)), str(e)
        assert Path(e.path) == path or path in Path(e.path).parents, (
            f"the error names {e.path}, not the input {path}"
        )
        return "error"
    assert isinstance(obj, (cctviz.Tree, cctviz.Ensemble)), type(obj)
    return "ok"


def _pick_target(sample: Path, rng: random.Random) -> Path:
    files = sorted(p for p in sample.rglob("*") if p.is_file())
    return rng.choice(files)


def fuzz_sample(
    sample: Path,
    fmt: str,
    tmp_path: Path,
    *,
    n: int = 50,
    seed: int = 0,
    truncation_fails: bool = True,
    target: str | None = None,
) -> Counter:
    """Read ``n`` mutants of ``sample`` with ``format=fmt`` (and with detection).

    ``sample`` is a file or a folder (a database); for a folder each mutant
    changes one file of a fresh copy (``target``: a glob limiting which files).
    With ``truncation_fails`` a truncated file must be an error (set it False for
    line formats, where a prefix can be a valid profile).
    Returns counts ``"<kind>:<ok|error>"``.
    """
    rng = random.Random(seed)
    stats: Counter = Counter()
    for k in range(n):
        work = tmp_path / f"m{k}"
        if sample.is_dir():
            dest = work / sample.name
            shutil.copytree(sample, dest)
            pool = sorted(dest.glob(target)) if target else None
            victim = rng.choice(pool) if pool else _pick_target(dest, rng)
            read_path = dest
        else:
            work.mkdir(parents=True)
            victim = work / sample.name
            shutil.copyfile(sample, victim)
            read_path = victim
        raw = victim.read_bytes()
        gz = raw[:2] == b"\x1f\x8b"
        data = gzip.decompress(raw) if gz else raw
        kind = KINDS[k % len(KINDS)]
        bad = mutate(data, kind, rng)
        victim.chmod(0o644)
        victim.write_bytes(gzip.compress(bad, mtime=0) if gz else bad)
        res = outcome(read_path, fmt)
        stats[f"{kind}:{res}"] += 1
        if kind == "truncate" and truncation_fails and not sample.is_dir():
            assert res == "error", f"{victim}: a truncated {fmt} file was read without error"
        detected = outcome(read_path, None)
        if res == "error":
            # detection must not half-read it either: error, or another reader's clean read
            assert detected in ("error", "ok")
        shutil.rmtree(work, ignore_errors=True)
    return stats


def assert_wrong_format_rejected(sample: Path, fmt: str) -> ProfileError:
    """Reading ``sample`` (of another format) with ``format=fmt`` is a ProfileError
    naming the file: a reader must not half-read a foreign file."""
    try:
        cctviz.read(sample, format=fmt)
    except ProfileError as e:
        assert e.path is not None and str(e).startswith(e.path), str(e)
        return e
    raise AssertionError(f"format={fmt!r} read {sample} (a file of another format) without error")
