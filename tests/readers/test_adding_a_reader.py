"""CONTRIBUTING.md's steps for a new reader, followed with a tiny one: a sniffer and
a reader registered with the registry, a tree built with the model's builder with
units and rules, bad input a ProfileError naming the file. The registry then
detects and reads its files like any other format's."""

from __future__ import annotations

from pathlib import Path

import pytest

import cctviz
from cctviz import ProfileError
from cctviz.readers import _READERS, detect, formats, register

MAGIC = b"TINYPROF\n"


@pytest.fixture
def tiny_format():
    """A reader of 'TINYPROF' files: one ``name parent time_ms`` line per node."""

    def sniff(path: Path, head: bytes) -> bool:  # step 1: a sniffer on the first bytes
        return head.startswith(MAGIC)

    @register("tiny-test", sniff, "a tiny format of CONTRIBUTING.md's example")
    def read_tiny(path: Path) -> cctviz.Tree:  # step 1: the reader
        lines = Path(path).read_bytes()[len(MAGIC) :].decode().splitlines()
        try:
            rows = [(name, int(parent), float(ms)) for name, parent, ms in map(str.split, lines)]
        except ValueError as e:  # step 3: bad input names the file and the place
            raise ProfileError(path, f"expected 'name parent time_ms' ({e})", "line 2+") from None
        return cctviz.Tree.from_parents(  # step 2: the model's builder, units and rules
            [p for _, p, _ in rows], [n for n, _, _ in rows], {"time": [t for _, _, t in rows]},
            meta={"units": {"time": "ms"}, "aggregation": {"time": "sum"}},
        )  # fmt: skip

    yield "tiny-test"
    _READERS.pop("tiny-test", None)


def test_a_tiny_reader_is_a_sniffer_a_function_and_a_registration(tiny_format, tmp_path):
    good = tmp_path / "run.tiny"
    good.write_bytes(MAGIC + b"main -1 10\nsolve 0 7\nio 0 2\n")
    assert tiny_format in formats()
    assert detect(good) == tiny_format
    tree = cctviz.read(good)
    assert tree.meta["format"] == tiny_format
    assert tree.nodes["name"].tolist() == ["main", "solve", "io"]
    assert tree.unit("time") == "ms" and tree.rule("time") == "sum"
    assert tree.metrics["time (inc)"].tolist() == [19.0, 7.0, 2.0]
    # two files of it: an ensemble, unified by call path, as every format's
    other = tmp_path / "other.tiny"
    other.write_bytes(MAGIC + b"main -1 1\nsolve 0 3\n")
    assert cctviz.read_ensemble([good, other], progress=False).n_profiles == 2
    bad = tmp_path / "bad.tiny"
    bad.write_bytes(MAGIC + b"main minus-one 10\n")
    with pytest.raises(ProfileError, match=r"bad\.tiny.*expected 'name parent time_ms'"):
        cctviz.read(bad)
