"""The drawing engine: one V8 context per process and bundle, errors that name the
bundle, safe to share between threads."""

from __future__ import annotations

import threading

import pytest

import cctviz.export.engine as engine_mod
from cctviz.errors import ExportError
from cctviz.export import get_engine, payload, render_svg
from cctviz.export.engine import Engine


def test_one_engine_per_bundle(view):
    assert get_engine() is get_engine()
    p = payload(view, width=200)
    assert render_svg(p) == get_engine().render_svg(p)
    import json

    assert render_svg(json.dumps(p)) == render_svg(p)  # JSON text or a dict


def test_threads_share_the_engine(view):
    p = payload(view, width=200)
    want = render_svg(p)
    got: list[str] = []

    def work():
        for _ in range(5):
            got.append(render_svg(p))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [want] * 20


def test_a_missing_bundle_is_named(tmp_path, monkeypatch, view):
    missing = tmp_path / "cctviz-export.js"
    monkeypatch.setattr(engine_mod, "EXPORT_BUNDLE", missing)
    with pytest.raises(ExportError, match=f"{missing}.*npm run build"):
        render_svg(payload(view))


def test_js_errors_name_the_bundle(tmp_path, view):
    bad = tmp_path / "broken-export.js"
    bad.write_text(
        "globalThis.cctvizExport = {renderSVG: function (s) {"
        " var p = JSON.parse(s); throw new TypeError('no chart ' + p.state.chart); }};"
    )
    with pytest.raises(ExportError) as e:
        Engine(bad).render_svg(payload(view))
    msg = str(e.value)
    assert "broken-export.js" in msg and "TypeError: no chart tree" in msg
    assert "\n" not in msg


def test_bundles_that_do_not_load(tmp_path):
    syntax = tmp_path / "syntax.js"
    syntax.write_text("globalThis.cctvizExport = {renderSVG: function ( {};")
    with pytest.raises(ExportError, match="syntax.js failed to load"):
        Engine(syntax)
    empty = tmp_path / "empty.js"
    empty.write_text("var x = 1;")
    with pytest.raises(ExportError, match=r"empty.js does not define cctvizExport.renderSVG"):
        Engine(empty)
    wrong = tmp_path / "wrong.js"
    wrong.write_text("globalThis.cctvizExport = {renderSVG: function () { return 42; }};")
    with pytest.raises(ExportError, match="returned int, not an SVG string"):
        Engine(wrong).render_svg("{}")


def test_engines_are_closed_at_exit(view):
    """mini-racer left to the garbage collector at interpreter exit can hang the
    process; the atexit hook closes every engine first."""
    p = payload(view, width=200)
    eng = get_engine()
    before = eng.render_svg(p)
    engine_mod._close_all()
    with pytest.raises(ExportError, match="was closed"):
        eng.render_svg(p)
    assert get_engine() is not eng and render_svg(p) == before


def test_an_engine_made_under_a_running_loop_keeps_working(view):
    """Made while an asyncio loop runs in the caller's thread (a Jupyter kernel's,
    Playwright's in the browser tests), the engine must not adopt that loop: once
    it stops, every export would wait on it for ever (a CI run hung so) or fail."""
    import asyncio

    from cctviz.export.engine import EXPORT_BUNDLE, Engine
    from cctviz.export.payload import payload

    async def make() -> Engine:
        return Engine(EXPORT_BUNDLE)

    engine = asyncio.run(make())  # the loop is closed when this returns
    try:
        assert "<text" in engine.render_svg(payload(view))
    finally:
        engine.close()


def test_a_dropped_engine_never_waits_for_the_v8_thread():
    """The garbage collector may finalize an engine on mini-racer's own callback
    thread while the V8 thread waits for a callback from that very thread (in a
    MiniRacer()): a finalizer that waited for the V8 thread would deadlock both
    (test_bundles_that_do_not_load drops engines). Here the V8 thread waits for the
    thread that drops an engine: the drop returns at once, the context is freed
    after."""
    import threading

    eng = Engine(engine_mod.EXPORT_BUNDLE)
    v8 = engine_mod.v8_thread()
    gate, busy, dropped = threading.Event(), threading.Event(), threading.Event()

    def hold() -> None:  # the V8 thread, waiting for the dropping thread
        busy.set()
        gate.wait(20)

    holder = threading.Thread(target=lambda: v8.run(hold), daemon=True)
    holder.start()
    try:
        assert busy.wait(10)

        def drop() -> None:
            eng.__del__()
            dropped.set()

        dropper = threading.Thread(target=drop, daemon=True)
        dropper.start()
        dropper.join(5)
        assert dropped.is_set(), "Engine.__del__ waited for the busy V8 thread"
    finally:
        gate.set()
        holder.join(10)
    with pytest.raises(ExportError, match="was closed"):
        eng.render_svg("{}")
    assert v8.run(lambda: "the V8 thread serves on") == "the V8 thread serves on"
