"""The browser harnesses themselves, proven on a toy anywidget (tests/ui/toywidget.py)."""

from __future__ import annotations

import sys
import time

import numpy as np
import pytest

from .harness import HarnessError
from .toywidget import Toy


def test_click_sets_python_trait_and_fires_observer(widget_page):
    w = Toy()
    seen = []
    w.observe(lambda change: seen.append(change.new), "count")
    wp = widget_page(w)
    view = wp.view(w)
    for _ in range(3):
        view.locator("button.inc").click()
    view.locator("button.push").click()
    wp.sync()
    assert w.count == 3
    assert seen == [1, 2, 3]
    assert w.items == [0]
    assert view.locator(".count").text_content() == "3"
    # Each click sent one update; Python answered each with an echo only.
    updates = [m for m in wp.received if m["method"] == "update"]
    assert [sorted(m["state"]) for m in updates] == [["count"]] * 3 + [["items"]]
    assert {m.method for m in wp.messages} == {"open", "echo_update"}


def test_observer_reply_reaches_js(widget_page):
    w = Toy()

    def clamp(change):  # Python overrides the front end's value
        if change.new > 2:
            w.count = 2

    w.observe(clamp, "count")
    wp = widget_page(w)
    for _ in range(4):
        wp.view(w).locator("button.inc").click()
    wp.sync()
    assert w.count == 2
    assert wp.js_get(w, "count") == 2
    assert wp.view(w).locator(".count").text_content() == "2"


def test_python_set_and_sync_changes_dom(widget_page):
    w = Toy(count=5)
    wp = widget_page(w)
    wp.wait_rendered(1, w)
    assert wp.view(w).locator(".count").text_content() == "5"
    w.count = 7
    w.items = [4, 5]
    wp.sync()
    assert wp.view(w).locator(".count").text_content() == "7"
    assert wp.view(w).locator(".items").text_content() == "[4,5]"
    wp.wait_rendered(3, w)  # one render per change event
    # CSS from _css is applied.
    weight = wp.eval("() => getComputedStyle(document.querySelector('.toy .count')).fontWeight")
    assert weight == "700"


def test_binary_buffers_both_ways(widget_page):
    data = np.array([1, -2, 0x01020304], dtype="<i4")
    w = Toy(blob={"data": memoryview(data), "n": 3})
    wp = widget_page(w)
    got = wp.eval(
        """(id) => {
          const b = window.__harness.model(id).get("blob");
          return [b.data instanceof DataView, b.data.byteLength, b.n,
                  b.data.getInt32(0, true), b.data.getInt32(4, true), b.data.getInt32(8, true)];
        }""",
        w.model_id,
    )
    assert got == [True, 12, 3, 1, -2, 0x01020304]
    assert wp.js_get(w, "blob") == {"data": {"DataView": list(data.tobytes())}, "n": 3}

    # Python -> JS after show, and the bytes counter.
    wp.reset_counters()
    big = np.arange(1000, dtype=np.float32)
    w.blob = {"data": memoryview(big), "n": 1000}
    wp.sync()
    assert wp.js_get(w, "blob")["data"]["DataView"] == list(big.tobytes())
    (msg,) = wp.messages
    assert (msg.method, msg.keys, msg.buffer_bytes) == ("update", ["blob"], 4000)
    assert 4000 < wp.bytes_sent < 4200

    # JS -> Python: a DataView set in JS arrives as a memoryview in the trait.
    w.blob = {"data": b"\x01\x02\x03", "n": 3}
    wp.sync()
    assert wp.view(w).locator(".blob").text_content() == "01 02 03"
    wp.view(w).locator("button.reverse").click()
    wp.sync()
    assert isinstance(w.blob["data"], memoryview)
    assert bytes(w.blob["data"]) == b"\x03\x02\x01"
    assert w.blob["n"] == 3


def test_esm_and_css_from_files(widget_page, tmp_path):
    # cctviz sets _esm/_css to pathlib.Paths of its bundle; anywidget reads the files.
    import anywidget
    import traitlets

    (tmp_path / "w.js").write_text(
        """export default () => ({
             initialize({ model }) { model.set("value", model.get("value") + 1); },
             render({ model, el }) {
               el.innerHTML = `<p class="from-file" data-rendered="1">${model.get("value")}</p>`;
             },
           });"""
    )
    (tmp_path / "w.css").write_text(".from-file { color: rgb(1, 2, 3); }")

    class FromFiles(anywidget.AnyWidget):
        _esm = tmp_path / "w.js"
        _css = tmp_path / "w.css"
        value = traitlets.Int(41).tag(sync=True)

    w = FromFiles()
    wp = widget_page(w)
    wp.wait_rendered(1, w)
    p = wp.view(w).locator("p.from-file")
    assert p.text_content() == "42"  # initialize() ran before render()
    assert p.evaluate("e => getComputedStyle(e).color") == "rgb(1, 2, 3)"
    assert w.value == 41  # set() without save_changes() stays in the front end


def test_custom_messages(widget_page):
    w = Toy(count=4)
    wp = widget_page(w)
    wp.view(w).locator("button.ping").click()
    wp.sync()
    assert wp.view(w).locator(".pong").text_content() == "40"
    assert wp.received[-1] == {"method": "custom", "content": {"ping": 4}}


def test_untrusted_text_is_not_html(widget_page):
    w = Toy(label="<img src=x onerror=alert(1)>")
    wp = widget_page(w)
    assert wp.view(w).locator(".label").text_content() == "<img src=x onerror=alert(1)>"
    assert wp.view(w).locator("img").count() == 0


def test_dialog_makes_harness_raise(widget_page):
    w = Toy()
    wp = widget_page(w)
    with wp.page.expect_event("dialog", timeout=30_000):  # once the image has failed
        wp.eval(
            """(id) => { document.querySelector(`[data-model-id="${id}"] .label`).innerHTML =
                         "<img src=x onerror=alert(1)>"; }""",
            w.model_id,
        )
    with pytest.raises(HarnessError, match=r"dialog \(alert\)"):
        wp.check()


def test_page_error_makes_harness_raise(widget_page):
    wp = widget_page(Toy())
    wp.eval("() => { setTimeout(() => { throw new Error('boom'); }, 0); }")
    with pytest.raises(HarnessError, match="boom"):
        wp.sync()
    wp.eval("() => console.error('bad thing')")
    with pytest.raises(HarnessError, match="bad thing"):
        wp.check()
    wp.check()  # reported once


def test_python_exception_makes_harness_raise(widget_page):
    w = Toy()

    def fail(change):
        raise ValueError("observer failed")

    w.observe(fail, "count")
    wp = widget_page(w)
    wp.view(w).locator("button.inc").click()
    with pytest.raises(HarnessError, match="observer failed"):
        wp.sync()


def test_lab_toy_widget_roundtrip(lab):
    t0 = time.perf_counter()
    with lab.open_notebook(["from toywidget import Toy\nw = Toy()\nw"]) as nb:
        # The kernel is this venv's python ("python3" kernelspec).
        out = nb.kernel_eval("import sys; print(sys.executable); print(sys.prefix)")
        assert out.split() == [sys.executable, sys.prefix]
        assert sys.prefix != sys.base_prefix  # ... and that is a venv
        nb.run_all()
        button = nb.page.locator(".toy button.inc")
        for _ in range(3):
            button.click()
        nb.page.locator(".toy .count", has_text="3").wait_for()
        assert nb.kernel_wait("print(w.count)", "3") == "3"
        nb.kernel_eval("w.items = [7, 8]")
        nb.page.locator(".toy .items", has_text="[7,8]").wait_for()
    print(f"lab notebook round trip: {time.perf_counter() - t0:.1f} s")
