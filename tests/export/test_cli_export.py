"""`cctviz export` and `cctviz view` on real profiles, and their errors."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pytest

import cctviz
from cctviz.cli import _make_view, main
from tests.conftest import DATA, HATCHET_JSON
from tests.export.checks import pdf_fonts, pdf_page_size, png_size, svg_pt, svg_texts

CPROFILE = DATA / "hatchet" / "cprofile-hatchet-pstats" / "cprofile-cycle.pstats"
PYINSTRUMENT = DATA / "hatchet" / "pyinstrument-hatchet-json" / "pyinstrument-hatchet-profile.json"


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("cctviz: ") and len(err.strip().splitlines()) == 1, err
    return err


def test_export_svg(tmp_path, capsys):
    out = tmp_path / "fig.svg"
    assert main(["export", str(HATCHET_JSON), "-o", str(out), "--width", "3.5in"]) == 0
    svg = out.read_text(encoding="utf-8")
    assert svg_pt(svg)[0] == pytest.approx(252, abs=0.01)
    assert {"foo", "bar", "waldo"} <= set(svg_texts(svg))
    # the deeper levels do not fit 3.5 in at 10 pt: a note, not a Python warning
    err = capsys.readouterr().err
    assert err.startswith("cctviz: note: CCTView at 10.0 pt: not drawn at this size: ")
    assert "deeper level" in err and "Warning" not in err


def test_export_pdf_of_a_cprofile_file(tmp_path):
    out = tmp_path / "fig.pdf"
    args = ["export", str(CPROFILE), "-o", str(out), "--width", "89mm", "--height", "100mm"]
    assert main([*args, "--font-size", "8", "--title", "cProfile"]) == 0
    assert pdf_page_size(out) == (pytest.approx(252.3, abs=0.5), pytest.approx(283.5, abs=0.5))
    assert all(f["emb"] == "yes" for f in pdf_fonts(out))


def test_export_png_scale(tmp_path):
    out = tmp_path / "fig.png"
    args = ["export", str(PYINSTRUMENT), "-o", str(out), "--width", "300", "--scale", "1"]
    assert main([*args, "--layout", "icicle", "--depth", "3"]) == 0
    assert png_size(out.read_bytes())[0] == 400


def test_export_format_option_and_html(tmp_path):
    out = tmp_path / "page"
    assert main(["export", str(HATCHET_JSON), "-o", str(out), "--format", "html"]) == 0
    assert out.read_bytes().startswith(b"<!doctype html>")


def test_export_several_profiles_into_a_folder(tmp_path, capsys):
    folder = tmp_path / "figs"
    args = ["export", str(HATCHET_JSON), str(CPROFILE), str(PYINSTRUMENT), "-o", str(folder)]
    assert main([*args, "--format", "pdf", "--no-legends"]) == 0
    names = sorted(p.name for p in folder.iterdir())
    assert names == [
        "cprofile-cycle.pdf",
        "hatchet-graph-literal.pdf",
        "pyinstrument-hatchet-profile.pdf",
    ]
    assert main(["export", str(HATCHET_JSON), str(CPROFILE), "-o", str(folder)]) == 0
    assert (folder / "cprofile-cycle.svg").is_file()  # svg without --format


def test_several_profiles_go_on_past_a_bad_one(tmp_path, capsys):
    bad = tmp_path / "broken.json"
    bad.write_text("{ not json")
    folder = tmp_path / "figs"
    assert main(["export", str(bad), str(HATCHET_JSON), "-o", str(folder)]) == 2
    assert one_error_line(capsys).startswith(f"cctviz: {bad}")
    assert [p.name for p in folder.iterdir()] == ["hatchet-graph-literal.svg"]


def test_same_output_name_twice_is_refused(tmp_path, capsys):
    other = tmp_path / "hatchet-graph-literal.json"
    other.write_bytes(HATCHET_JSON.read_bytes())
    assert main(["export", str(HATCHET_JSON), str(other), "-o", str(tmp_path / "o")]) == 2
    assert "would both be written to" in one_error_line(capsys)


def test_view_writes_a_page_and_prints_its_path(tmp_path, capsys):
    out = tmp_path / "page.html"
    assert main(["view", str(HATCHET_JSON), "-o", str(out), "--color", "time"]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    assert out.read_text(encoding="utf-8").startswith("<!doctype html>")
    assert main(["view", str(CPROFILE)]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed.endswith("cprofile-cycle.html")
    page = Path(printed)
    assert page.is_file() and "cprofile-cycle.pstats" in page.read_text(encoding="utf-8")
    page.unlink()
    page.parent.rmdir()


def ns(**kw) -> argparse.Namespace:
    base = dict(
        color=None,
        color2=None,
        size=None,
        query=None,
        focus=None,
        depth=None,
        layout="tree",
        max_nodes=2000,
    )
    return argparse.Namespace(**{**base, **kw})


def test_view_options_set_the_state(hatchet_tree):
    t = hatchet_tree
    v = _make_view(t, ns(query='MATCH (".", a) WHERE a."name" = "bar"', color2="time"))
    assert [t.names[i] for i in v.selection.ids] == ["bar", "bar", "bar"]
    assert v.color == ("time (inc)", "time")
    qux = int(np.flatnonzero(t.callpaths.to_numpy() == "foo/qux")[0])
    v = _make_view(t, ns(focus="foo/qux", depth=2, size="none"))
    assert v.focus == qux and v.size == ""
    # two levels below the top: qux, quux; quux drawn collapsed
    assert [t.names[i] for i in v.collapsed] == ["quux"]
    assert set(v.visible["name"]) == {"qux", "quux"}
    v = _make_view(t, ns(depth=1, layout="icicle"))
    assert [t.names[i] for i in v.collapsed] == ["foo", "waldo"]
    assert v.state.get("chart", v.state.get("layout")) == "icicle"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--color", "nope"], "no metric 'nope'"),
        (["--size", "nope"], "no metric 'nope'"),
        (["--width", "wide"], "width: expected a length"),
        (["--height=-3in"], "height: must be a positive length"),
        (["--scale", "2"], "--scale: only a PNG takes it, not SVG"),
        (["--focus", "foo/nothere"], "--focus: no node has the call path 'foo/nothere'"),
        (["--query", "MATCH bad"], "expected '('"),
        (["--format", "png"], "--format png does not match -o"),
        (["--format", "eps"], "--format: expected one of svg, pdf, png, html"),
    ],
)
def test_wrong_options_give_one_line(tmp_path, capsys, args, words):
    out = tmp_path / "fig.svg"
    assert main(["export", str(HATCHET_JSON), "-o", str(out), *args]) == 2
    assert words in one_error_line(capsys)
    assert not out.exists()


def test_wrong_files_give_one_line(tmp_path, capsys):
    missing = tmp_path / "missing.json"
    assert main(["export", str(missing), "-o", str(tmp_path / "fig.svg")]) == 2
    assert str(missing) in one_error_line(capsys)
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"\x00\x01\x02 not a profile")
    assert main(["export", str(garbage), "-o", str(tmp_path / "fig.svg")]) == 2
    assert str(garbage) in one_error_line(capsys)
    assert main(["export", str(HATCHET_JSON), "-o", str(tmp_path / "fig.jpg")]) == 2
    assert "cannot tell the format" in one_error_line(capsys)
    assert main(["export", str(HATCHET_JSON), "-o", str(tmp_path / "no" / "fig.svg")]) == 2
    assert "does not exist" in one_error_line(capsys)
    assert main(["view", str(missing)]) == 2
    assert str(missing) in one_error_line(capsys)


def test_argparse_refuses_bad_values(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["export", str(HATCHET_JSON), "-o", str(tmp_path / "f.svg"), "--depth", "0"])
    assert e.value.code == 2
    assert "--depth/-d: must be at least 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["export", str(HATCHET_JSON)])  # -o is required
    assert "-o/--output" in capsys.readouterr().err


def test_help_explains_every_option(capsys):
    with pytest.raises(SystemExit):
        main(["export", "--help"])
    out = capsys.readouterr().out
    for opt in (
        "--output",
        "--format",
        "--color",
        "--color2",
        "--size",
        "--query",
        "--focus",
        "--depth",
        "--layout",
        "--width",
        "--height",
        "--font-size",
        "--title",
        "--no-legends",
        "--background",
        "--scheme",
        "--scale",
        "--dpi",
    ):
        assert opt in out
    assert "3.5in" in out and "cctviz[export]" in out
    with pytest.raises(SystemExit):
        main(["view", "--help"])
    out = capsys.readouterr().out
    assert "--output" in out and "--focus" in out and "self-contained" in out


def test_cli_views_match_python(tmp_path, hatchet_tree):
    """The CLI's figure is the one `save` writes for the same state."""
    out = tmp_path / "cli.svg"
    assert main(["export", str(HATCHET_JSON), "-o", str(out), "--width", "300"]) == 0
    py = cctviz.export.save(cctviz.CCTView(hatchet_tree), tmp_path / "py.svg", width=300)
    assert out.read_bytes() == py.read_bytes()


def test_the_command_runs_and_exits(tmp_path):
    """`python -m cctviz.cli export` in its own process: writes and exits (no hang
    at exit, no browser on PATH)."""
    import os
    import subprocess
    import sys

    out = tmp_path / "fig.svg"
    code = "import sys, cctviz.cli as c; sys.exit(c.main(sys.argv[1:]))"
    run = subprocess.run(
        [sys.executable, "-c", code, "export", str(HATCHET_JSON), "-o", str(out)],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "foo" in svg_texts(out.read_text(encoding="utf-8"))


# ---------------------------------------------------------------- --view sankey
LULESH_RUNS = sorted((DATA / "hatchet-tutorial" / "lulesh-scaling").glob("*.json"))
KRIPKE_DB = DATA / "hatchet-tutorial" / "hpctoolkit-kripke-database-2589696"


def test_export_sankey_of_a_multi_rank_database(tmp_path, capsys):
    out = tmp_path / "sankey.svg"
    args = ["export", str(KRIPKE_DB), "-o", str(out), "--view", "sankey", "--width", "7in"]
    assert main(args) == 0
    svg = out.read_text(encoding="utf-8")
    assert svg_pt(svg)[0] == pytest.approx(504, abs=0.01)
    # load modules are paths: nodes are named by their basename (the tooltip has the path)
    assert 'aria-label="libmpi.so.12.1.1' in svg and "/usr/tce" not in " ".join(svg_texts(svg))
    assert "64 profiles" in " ".join(svg_texts(svg))
    assert main(args) == 0 and out.read_text(encoding="utf-8") == svg  # deterministic
    notes = capsys.readouterr().err.splitlines()  # the deeper columns cut, said twice
    assert len(notes) == 2 and all("deeper column" in n for n in notes), notes


def test_export_sankey_diff_of_several_files_as_one_ensemble(tmp_path):
    out = tmp_path / "diff.pdf"
    eight = next(p for p in LULESH_RUNS if p.name.endswith("-8cores.json"))
    big = next(p for p in LULESH_RUNS if p.name.endswith("-64cores.json"))
    args = ["export", str(eight), str(big), "-o", str(out), "--view", "sankey"]
    assert main([*args, "--diff", f"file={eight},{big}", "--group-by", "name"]) == 0
    assert out.read_bytes().startswith(b"%PDF") and all(f["emb"] == "yes" for f in pdf_fonts(out))


def test_sankey_options_are_checked(tmp_path, capsys):
    out = str(tmp_path / "x.svg")
    assert main(["export", str(KRIPKE_DB), "-o", out, "--group-by", "module"]) != 0
    assert "--view sankey" in one_error_line(capsys)
    assert main(["export", str(KRIPKE_DB), "-o", out, "--view", "sankey", "--group-by", "lib"]) != 0
    assert "no such node attribute" in one_error_line(capsys)
    with pytest.raises(SystemExit):
        main(["export", str(KRIPKE_DB), "-o", out, "--view", "sankey", "--diff", "rank=1"])
    assert "COLUMN=A,B" in capsys.readouterr().err


def test_export_profiles_view_of_runs_and_the_view_choices(tmp_path, capsys):
    """--view profiles: several files (runs) make one ensemble and one figure of its
    profiles; the choices of --view are the views the package ships."""
    from cctviz.views.kinds import BUILT_IN_VIEWS

    out = tmp_path / "runs.svg"
    assert main(["export", *map(str, LULESH_RUNS), "-o", str(out), "--view", "profiles"]) == 0
    texts = " ".join(svg_texts(out.read_text(encoding="utf-8")))
    assert "PC1" in texts and "of variance" in texts
    assert main(["export", str(HATCHET_JSON), "-o", str(out), "--view", "profiles"]) != 0
    assert "give several PROFILEs" in one_error_line(capsys)
    with pytest.raises(SystemExit):
        main(["export", str(HATCHET_JSON), "-o", str(out), "--view", "nope"])
    said = capsys.readouterr().err
    assert all(f"'{kind}'" in said for kind in BUILT_IN_VIEWS), said


def test_export_width_natural(tmp_path):
    """``--width natural``: the content's own width (the default is 7 in)."""
    out = tmp_path / "fig.svg"
    assert main(["export", str(HATCHET_JSON), "-o", str(out), "--width", "natural"]) == 0
    natural = svg_pt(out.read_text(encoding="utf-8"))[0]
    assert main(["export", str(HATCHET_JSON), "-o", str(out)]) == 0
    assert svg_pt(out.read_text(encoding="utf-8"))[0] == pytest.approx(504, abs=0.01) != natural
