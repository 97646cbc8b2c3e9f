"""The views kit: a new view is one Python module (a View registered with
register_view), one js/<kind>/ folder and one line in js/kinds.js. This test adds a
tiny view that way, in a copy of the front end, builds the export bundle from it and
exports the view through the real engine, text set as text."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import traitlets

import cctviz
from cctviz.export.engine import Engine
from cctviz.export.payload import payload
from cctviz.views.base import VIEW_KINDS, View, register_view, view_kinds
from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # an esbuild build

TINY_JS = """// A tiny view: a list of the tree's names (the kit's DOM helpers, shim in export).
import { registerView } from "../kit/registry.js";
import { h, serialize, SVG_NS } from "../dom.js";
import { shimContainer } from "../shim.js";

function tinySVG(data, state, options) {
  const doc = shimContainer().ownerDocument;
  const svg = h(doc, "svg:svg", { class: "cctviz-tiny", width: "200pt", height: "100pt" });
  (data.names || []).forEach((name, i) => svg.appendChild(h(doc, "svg:text", { y: 12 * (i + 1) }, `${state.word} ${name}`)));
  return serialize(svg);
}

registerView("tiny", { figure: tinySVG });
"""


@pytest.fixture
def tiny_kind():
    @register_view("tiny")
    class TinyView(View):
        """A view of a tree's names (the kit's whole contract: traits and state)."""

        STATE = ("word",)
        word = traitlets.Unicode("node").tag(sync=True)
        _data = traitlets.Dict().tag(sync=True)

        def __init__(self, tree: cctviz.Tree, **kw) -> None:
            super().__init__(**kw)
            self._data = {"n": len(tree), "names": [str(x) for x in tree.names]}

    yield TinyView
    VIEW_KINDS.pop("tiny", None)


def test_a_tiny_view_is_one_module_one_folder_and_a_line(tiny_kind, tmp_path):
    # the front end with the tiny view: its folder and its line in js/kinds.js
    work = ROOT / "build" / f"kit-{tmp_path.name}"  # inside the repo: node_modules resolves
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(ROOT / "js", work / "js")
    try:
        (work / "js" / "tiny").mkdir()
        (work / "js" / "tiny" / "index.js").write_text(TINY_JS)
        kinds = work / "js" / "kinds.js"
        kinds.write_text(kinds.read_text() + 'import "./tiny/index.js";\n')
        bundle = work / "cctviz-export.js"
        esbuild = ROOT / "node_modules" / ".bin" / "esbuild"
        subprocess.run(
            [str(esbuild), str(work / "js" / "export.js"), "--bundle", "--format=iife",
             "--global-name=cctvizExport", "--target=es2020", "--define:define.amd=false",
             f"--outfile={bundle}"],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        tree = cctviz.Tree.from_parents([-1, 0], ["main", "<b>solve</b>"], {"time": [1.0, 2.0]})
        view = tiny_kind(tree, word="in")
        assert view.kind == "tiny" and VIEW_KINDS["tiny"] is tiny_kind
        p = payload(view)
        assert p["kind"] == "tiny" and p["state"] == {"word": "in"}
        engine = Engine(bundle)
        try:
            svg = engine.render_svg(p)
        finally:
            engine.close()
        assert 'class="cctviz-tiny"' in svg and "in main" in svg
        assert "in &lt;b&gt;solve&lt;/b&gt;" in svg  # names are text, never markup
        # the built-in kinds still draw from the same bundle
        engine = Engine(bundle)
        try:
            assert "<svg" in engine.render_svg(payload(cctviz.CCTView(tree)))
        finally:
            engine.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_registering_a_kind_twice_is_an_error(tiny_kind):
    with pytest.raises(ValueError, match="view kind 'tiny' is taken"):
        register_view("tiny")(type("Other", (View,), {}))


def test_the_built_in_views_are_registered():
    assert {"cct", "sankey", "profiles"} <= set(view_kinds())
    tree = cctviz.Tree.from_parents([-1, 0], ["main", "solve"], {"time": [1.0, 2.0]})
    for kind, view in [("cct", cctviz.CCTView(tree)), ("sankey", cctviz.SankeyView(tree))]:
        assert view.kind == kind and isinstance(view, VIEW_KINDS[kind]) and isinstance(view, View)
