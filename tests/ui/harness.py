"""Kernel-less browser harness for anywidget widgets (Playwright, headless Chromium).

A live Python widget is shown in a blank page served from 127.0.0.1. The page runs
the widget's real `_esm`/`_css` against a small fake of anywidget's model
(`get`/`set`/`on`/`off`/`save_changes`/`send`, `msg:custom`). The Python widget keeps
running for real: its comm is replaced by a recording one, and every front-end
message goes through the widget's own `_handle_msg`, so deserializers, echo
updates, the property lock and observers behave as in a kernel.

- JS -> Python: `save_changes()`/`send()` call an exposed binding; Python handles
  the message and returns everything the widget sent meanwhile (echoes, updates
  made by observers, custom replies), which the fake model applies at once.
- Python -> JS: after Python code sets traits, `WidgetPage.sync()` delivers the
  queued messages (and waits for the page's pending round trips).

Usage (the `widget_page` fixture from tests/ui/conftest.py builds the page)::

    w = Toy()
    wp = widget_page(w)                 # show(w) and wait for the first render
    wp.view(w).locator("button.inc").click()
    wp.sync()                           # wait for JS -> Python round trips
    assert w.count == 1
    w.count = 7
    wp.sync()                           # deliver Python -> JS updates
    wp.wait_rendered(3, w)

Console errors, uncaught page errors, dialogs (alert/confirm/prompt) and exceptions
raised while Python handles a front-end message are recorded; `check()` (called by
`sync()`, `wait_rendered()` and the fixture's finalizer) raises `HarnessError`.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import shutil
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import comm
from comm.base_comm import BaseComm
from ipywidgets.widgets.widget import _remove_buffers

try:  # the packer a kernel uses (rejects NaN, warns on non-JSON values)
    from jupyter_client.session import json_packer as _json_packer
except ImportError:  # pragma: no cover

    def _json_packer(obj: Any) -> bytes:
        return json.dumps(obj, ensure_ascii=False, allow_nan=False).encode()


_RERENDER_JS = """async (id) => {
  const m = window.__harness.models.get(id);
  const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
  const t0 = performance.now();
  m._emit("change:_data", m.proxy, m.get("_data"));
  await frame(); await frame();
  return performance.now() - t0;
}"""

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_path() -> str | None:
    """Debian's Chromium (or $CCTVIZ_CHROMIUM); None when there is none."""
    for candidate in (os.environ.get("CCTVIZ_CHROMIUM"), "/usr/bin/chromium"):
        if candidate and os.path.exists(candidate):
            return candidate
    return shutil.which("chromium")


def launch_browser(playwright: Any) -> Any:
    """Headless Chromium with the project's flags."""
    path = chromium_path()
    if path is None:
        raise RuntimeError("no chromium: install the Debian package or set CCTVIZ_CHROMIUM")
    return playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS, headless=True)


class HarnessError(AssertionError):
    """The page or the widget reported errors (console, page error, dialog, Python)."""


# --------------------------------------------------------------------------- page

HARNESS_JS = r"""
(() => {
  const models = new Map();
  const pending = new Set();
  const errors = [];
  let seq = 0;
  let viewSeq = 0;

  const isBuffer = (v) => v instanceof ArrayBuffer || ArrayBuffer.isView(v);
  const bytesOf = (v) =>
    v instanceof ArrayBuffer ? new Uint8Array(v) : new Uint8Array(v.buffer, v.byteOffset, v.byteLength);

  function b64ToView(s) {
    const bin = atob(s);
    const u8 = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) u8[i] = bin.charCodeAt(i);
    return new DataView(u8.buffer);
  }

  function viewToB64(v) {
    const u8 = bytesOf(v);
    let s = "";
    for (let i = 0; i < u8.length; i += 0x8000) s += String.fromCharCode.apply(null, u8.subarray(i, i + 0x8000));
    return btoa(s);
  }

  // ipywidgets' put_buffers: buffers arrive as DataViews at their paths.
  function putBuffers(state, paths, views) {
    paths.forEach((path, i) => {
      let obj = state;
      for (const key of path.slice(0, -1)) obj = obj[key];
      obj[path[path.length - 1]] = views[i];
    });
  }

  // ipywidgets' remove_buffers: binary values leave the JSON (null in lists).
  function removeBuffers(state) {
    const buffers = [], buffer_paths = [];
    function walk(obj, path) {
      if (Array.isArray(obj)) {
        return obj.map((v, i) => {
          if (isBuffer(v)) { buffers.push(v); buffer_paths.push([...path, i]); return null; }
          return walk(v, [...path, i]);
        });
      }
      if (obj !== null && typeof obj === "object" && typeof obj.toJSON !== "function") {
        const out = {};
        for (const [k, v] of Object.entries(obj)) {
          if (isBuffer(v)) { buffers.push(v); buffer_paths.push([...path, k]); }
          else out[k] = walk(v, [...path, k]);
        }
        return out;
      }
      return obj;
    }
    return { state: walk(state, []), buffer_paths, buffers };
  }

  // Backbone/underscore isEqual, enough for widget state (buffers compare by bytes).
  function deepEqual(a, b) {
    if (a === b) return true;
    if (typeof a === "number" && typeof b === "number") return Number.isNaN(a) && Number.isNaN(b);
    if (isBuffer(a) || isBuffer(b)) {
      if (!isBuffer(a) || !isBuffer(b)) return false;
      const x = bytesOf(a), y = bytesOf(b);
      return x.length === y.length && x.every((v, i) => v === y[i]);
    }
    if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
    if (Array.isArray(a) !== Array.isArray(b)) return false;
    const ka = Object.keys(a), kb = Object.keys(b);
    return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && deepEqual(a[k], b[k]));
  }

  function report(e) {
    errors.push(`harness: ${e && e.stack ? e.stack : e}`);
  }

  class FakeModel {
    constructor(id, state) {
      this.id = id;
      this.attrs = state;
      this.handlers = [];
      this.dirty = new Set();
      this.expectedEcho = new Map();
      this.views = [];
      const self = this;
      this.proxy = {
        get: (k) => self.get(k),
        set: (k, v) => self.set(k, v),
        save_changes: () => self.save_changes(),
        send: (content, callbacks, buffers) => self.send(content, callbacks, buffers),
        on: (name, cb, ctx) => self.on(name, cb, ctx),
        off: (name, cb, ctx) => self.off(name, cb, ctx),
        widget_manager: {},
      };
    }
    get(key) { return this.attrs[key]; }
    set(key, value) { this._apply(typeof key === "object" ? key : { [key]: value }, true); }
    _apply(state, local) {
      const changed = [];
      for (const [k, v] of Object.entries(state)) {
        if (deepEqual(this.attrs[k], v)) continue;
        this.attrs[k] = v;
        changed.push(k);
        if (local) this.dirty.add(k);
      }
      for (const k of changed) this._emit(`change:${k}`, this.proxy, this.attrs[k]);
      if (changed.length) this._emit("change", this.proxy);
    }
    on(names, cb, ctx) {
      for (const name of names.split(/\s+/).filter(Boolean)) this.handlers.push({ name, cb, ctx });
    }
    off(names, cb, ctx) {
      const set = names ? new Set(names.split(/\s+/)) : null;
      this.handlers = this.handlers.filter(
        (h) => !((!set || set.has(h.name)) && (!cb || h.cb === cb) && (!ctx || h.ctx === ctx)));
    }
    _emit(name, ...args) {
      for (const h of this.handlers.slice()) if (h.name === name) h.cb.apply(h.ctx || this.proxy, args);
    }
    save_changes() {
      if (!this.dirty.size) return;
      const state = {};
      for (const k of this.dirty) state[k] = this.attrs[k];
      this.dirty.clear();
      const r = removeBuffers(state);
      const msgId = this._post({ method: "update", state: r.state, buffer_paths: r.buffer_paths }, r.buffers);
      for (const k of Object.keys(state)) this.expectedEcho.set(k, msgId);
    }
    send(content, callbacks, buffers) {
      this._post({ method: "custom", content }, buffers || []);
    }
    _post(data, buffers) {
      const msgId = `js-${++seq}`;
      const payload = JSON.stringify({ model_id: this.id, msg_id: msgId, data, buffers: buffers.map(viewToB64) });
      const p = window.__harnessToPython(payload).then((reply) => deliver(reply)).catch(report);
      pending.add(p);
      p.then(() => pending.delete(p));
      return msgId;
    }
    // ipywidgets' WidgetModel._handle_comm_msg, without the kernel.
    _receive(msg) {
      const data = msg.data;
      const buffers = msg.buffers.map(b64ToView);
      if (data.method === "update" || data.method === "echo_update") {
        const state = data.state;
        putBuffers(state, data.buffer_paths || [], buffers);
        if (data.method === "echo_update") {
          for (const k of Object.keys(state)) {
            if (!this.expectedEcho.has(k)) continue;
            if (this.expectedEcho.get(k) !== msg.parent) delete state[k];  // older than our last change
            else {
              this.expectedEcho.delete(k);
              if (this.dirty.has(k)) delete state[k];  // a newer change is about to be sent
            }
          }
        }
        this._apply(state, false);
      } else if (data.method === "custom") {
        this._emit("msg:custom", data.content, buffers);
      }
    }
  }

  function deliver(reply) {
    for (const msg of JSON.parse(reply)) {
      const model = models.get(msg.model_id);
      if (model) model._receive(msg);
    }
  }

  const isHref = (s) => s.startsWith("http://") || s.startsWith("https://");

  async function loadWidget(esm) {
    const url = isHref(esm) ? esm : URL.createObjectURL(new Blob([esm], { type: "text/javascript" }));
    let mod;
    try { mod = await import(url); } finally { if (!isHref(esm)) URL.revokeObjectURL(url); }
    if (mod.render) return { render: mod.render };
    if (!mod.default) throw new Error("module must export a default function or object");
    return typeof mod.default === "function" ? await mod.default() : mod.default;
  }

  function loadCss(css, id) {
    if (!css) return;
    const selector = `[data-anywidget-id="${CSS.escape(id)}"]`;
    let node = document.head.querySelector(selector);
    if (!node) {
      node = document.createElement(isHref(css) ? "link" : "style");
      node.setAttribute("data-anywidget-id", id);
      document.head.appendChild(node);
    }
    if (isHref(css)) { node.rel = "stylesheet"; node.href = css; } else node.textContent = css;
  }

  window.__harness = {
    models,
    errors,
    model: (id) => models.get(id).proxy,
    async show(spec) {
      let model = models.get(spec.model_id);
      if (!model) {
        const state = spec.state;
        putBuffers(state, spec.buffer_paths, spec.buffers.map(b64ToView));
        model = new FakeModel(spec.model_id, state);
        models.set(spec.model_id, model);
        model.def = await loadWidget(state._esm);
        if (model.def.initialize) await model.def.initialize({ model: model.proxy, experimental: {} });
      }
      loadCss(model.get("_css"), model.get("_anywidget_id") || spec.model_id);
      const el = document.createElement("div");
      el.className = "harness-view";
      el.dataset.modelId = spec.model_id;
      el.dataset.viewId = String(++viewSeq);
      document.body.appendChild(el);
      if (model.def.render) model.views.push(await model.def.render({ model: model.proxy, el, experimental: {} }));
      return el.dataset.viewId;
    },
    deliver,
    async flush() {
      while (pending.size) await Promise.all([...pending]);
    },
    async settle() {
      await new Promise((r) => setTimeout(r, 0));
      return errors.splice(0);
    },
    rendered(id) {
      const sel = id ? `.harness-view[data-model-id="${CSS.escape(id)}"]` : ".harness-view";
      const views = [...document.querySelectorAll(sel)];
      if (!views.length) return -1;
      const el = views[views.length - 1];
      const root = el.hasAttribute("data-rendered") ? el : el.querySelector("[data-rendered]");
      return root ? Number(root.getAttribute("data-rendered")) : -1;
    },
  };
})();
"""

INDEX_HTML = (
    "<!doctype html><html><head><meta charset='utf-8'><title>widget harness</title>"
    "<link rel='icon' href='data:,'></head><body><script>" + HARNESS_JS + "</script></body></html>"
).encode()


class HarnessServer:
    """A throwaway http server on 127.0.0.1 serving the blank harness page at `/`.

    (ES modules, Blob URLs included, need an http origin.)
    """

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?")[0] != "/":
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(INDEX_HTML)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(INDEX_HTML)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)

    def __enter__(self) -> HarnessServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ------------------------------------------------------------------------- python


@dataclass
class SentMessage:
    """One message from the Python widget to the front end."""

    model_id: str
    method: str  # "open" (initial state at show), "update", "echo_update", "custom"
    keys: list[str]
    json_bytes: int
    buffer_bytes: int

    @property
    def nbytes(self) -> int:
        return self.json_bytes + self.buffer_bytes


class RecordingComm(BaseComm):
    """Stands in for the kernel comm: queues what the widget sends for the page."""

    def __init__(self, harness: WidgetPage, comm_id: str) -> None:
        self._harness = harness
        super().__init__(target_name="jupyter.widget", comm_id=comm_id, primary=False)
        comm.get_comm_manager().register_comm(self)  # so that widget.close() unregisters it

    def publish_msg(self, msg_type: str, data=None, metadata=None, buffers=None, **keys: Any):
        if msg_type == "comm_msg":
            self._harness._queue(self.comm_id, data or {}, buffers or [])


class _Capture(logging.Handler):
    """ipywidgets logs (not raises) exceptions from `_handle_msg` without IPython."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            self.records.append(record)


def _loggers(widget: Any) -> list[logging.Logger]:
    from traitlets.log import get_logger

    out = []
    for log in (getattr(widget, "log", None), get_logger()):
        log = getattr(log, "logger", log)  # LoggerAdapter
        if isinstance(log, logging.Logger) and log not in out:
            out.append(log)
    return out


@dataclass
class _Outgoing:
    model_id: str
    parent: str | None
    data_json: bytes
    buffers: list[bytes] = field(default_factory=list)

    def to_js(self) -> dict:
        return {
            "model_id": self.model_id,
            "parent": self.parent,
            "data": json.loads(self.data_json),
            "buffers": [base64.b64encode(b).decode("ascii") for b in self.buffers],
        }


class WidgetPage:
    """A Playwright page showing live anywidget widgets without a kernel."""

    BINDING = "__harnessToPython"

    def __init__(self, page: Any, url: str) -> None:
        self.page = page
        self.errors: list[str] = []  # unreported errors; check() raises and clears
        self.console: list[str] = []  # every console message, for debugging
        self.messages: list[SentMessage] = []  # everything sent to the front end
        self.received: list[dict] = []  # every front-end message (data part)
        self._widgets: dict[str, Any] = {}
        self._outbox: list[_Outgoing] = []
        self._parent: str | None = None
        page.on("console", self._on_console)
        page.on("pageerror", lambda exc: self.errors.append(f"page error: {exc}"))
        page.on("dialog", self._on_dialog)
        page.expose_function(self.BINDING, self._from_js)
        page.goto(url)
        page.wait_for_function("() => window.__harness !== undefined")

    # -- events
    def _on_console(self, msg: Any) -> None:
        text = f"console.{msg.type}: {msg.text}"
        self.console.append(text)
        if msg.type == "error":
            loc = msg.location or {}
            self.errors.append(f"{text} ({loc.get('url', '')}:{loc.get('lineNumber', '')})")

    def _on_dialog(self, dialog: Any) -> None:
        self.errors.append(f"dialog ({dialog.type}): {dialog.message!r}")
        with contextlib.suppress(Exception):
            dialog.dismiss()

    # -- Python -> JS
    def _queue(self, model_id: str, data: dict, buffers: list) -> None:
        payload = _json_packer(data)
        raw = [memoryview(b).tobytes() for b in buffers]
        state = data.get("state") or {}
        self.messages.append(
            SentMessage(
                model_id, data.get("method", "?"), list(state), len(payload), sum(map(len, raw))
            )
        )
        self._outbox.append(_Outgoing(model_id, self._parent, payload, raw))

    def _drain(self) -> str:
        out, self._outbox = self._outbox, []
        return json.dumps([m.to_js() for m in out])

    # -- JS -> Python (runs inside Playwright's event dispatch)
    def _from_js(self, payload: str) -> str:
        try:
            m = json.loads(payload)
            widget = self._widgets[m["model_id"]]
            self.received.append(m["data"])
            msg = {
                "header": {"msg_id": m["msg_id"], "msg_type": "comm_msg"},
                "parent_header": {},
                "metadata": {},
                "content": {"comm_id": m["model_id"], "data": m["data"]},
                "buffers": [memoryview(base64.b64decode(b)) for b in m["buffers"]],
            }
            capture = _Capture()
            loggers = _loggers(widget)
            for log in loggers:
                log.addHandler(capture)
            self._parent = m["msg_id"]
            try:
                widget.comm.handle_msg(msg)
            finally:
                self._parent = None
                for log in loggers:
                    log.removeHandler(capture)
            for rec in capture.records:
                self.errors.append("python: " + logging.Formatter().format(rec))
        except Exception:
            import traceback

            self.errors.append("python: " + traceback.format_exc())
        return self._drain()

    # -- public API
    def show(self, widget: Any, *, wait_render: bool = True) -> Any:
        """Render `widget` in a new view; returns the view's Locator."""
        model_id = widget.model_id
        if model_id not in self._widgets:
            if isinstance(widget.comm, RecordingComm):
                raise ValueError("widget is already shown by another WidgetPage")
            old = widget.comm
            widget.comm = RecordingComm(self, model_id)
            if old is not None:
                with contextlib.suppress(Exception):
                    old.on_msg(None)
            self._widgets[model_id] = widget
        state, buffer_paths, buffers = _remove_buffers(widget.get_state())
        payload = _json_packer({"state": state, "buffer_paths": buffer_paths})
        raw = [memoryview(b).tobytes() for b in buffers]
        self.messages.append(
            SentMessage(model_id, "open", list(state), len(payload), sum(map(len, raw)))
        )
        spec = {
            "model_id": model_id,
            "state": json.loads(payload)["state"],
            "buffer_paths": buffer_paths,
            "buffers": [base64.b64encode(b).decode("ascii") for b in raw],
        }
        view_id = self.page.evaluate("(spec) => window.__harness.show(spec)", spec)
        view = self.page.locator(f'.harness-view[data-view-id="{view_id}"]')
        if wait_render:
            self.sync()
        return view

    def view(self, widget: Any = None) -> Any:
        """Locator of the widget's last view (of the last view shown without `widget`)."""
        sel = ".harness-view"
        if widget is not None:
            sel += f'[data-model-id="{widget.model_id}"]'
        return self.page.locator(sel).last

    def sync(self, max_rounds: int = 100) -> None:
        """Finish JS -> Python round trips and deliver Python -> JS messages."""
        for _ in range(max_rounds):
            self.page.evaluate("() => window.__harness.flush()")
            if not self._outbox:
                break
            self.page.evaluate("(m) => window.__harness.deliver(m)", self._drain())
        else:
            raise HarnessError(f"messages still flowing after {max_rounds} rounds (echo loop?)")
        self.check()

    def sync_until(self, done: Any, timeout: float = 15.0) -> None:
        """`sync()` until ``done()`` is true (a debounce or an image error fires
        later than a fixed wait on a loaded machine); HarnessError after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while True:
            self.sync()
            if done():
                return
            if time.monotonic() > deadline:
                raise HarnessError(f"not done after {timeout} s: {done}")
            self.page.wait_for_timeout(50)

    def wait_rendered(self, count: int = 1, widget: Any = None, timeout: float = 10_000) -> None:
        """Wait until the view's root `data-rendered` counter is >= count."""
        model_id = None if widget is None else widget.model_id
        self.page.wait_for_function(
            "([id, n]) => window.__harness.rendered(id) >= n",
            arg=[model_id, count],
            timeout=timeout,
        )
        self.check()

    def eval(self, js: str, arg: Any = None) -> Any:
        """`page.evaluate(js, arg)`; `window.__harness.model(model_id)` is a model."""
        return self.page.evaluate(js, arg)

    def rerender_ms(self, widget: Any) -> float:
        """Browser time of one full re-render of ``widget``'s current ``_data``:
        ``change:_data`` fired in the page, until two animation frames later
        (layout and paint included). For the benchmarks."""
        return float(self.page.evaluate(_RERENDER_JS, widget.model_id))

    def js_get(self, widget: Any, key: str) -> Any:
        """A trait as the front end sees it (DataViews become {'DataView': [bytes]})."""
        return self.page.evaluate(
            """([id, key]) => JSON.parse(JSON.stringify(window.__harness.model(id).get(key),
                 (k, v) => v instanceof DataView
                   ? {DataView: Array.from(new Uint8Array(v.buffer, v.byteOffset, v.byteLength))}
                   : v))""",
            [widget.model_id, key],
        )

    @property
    def bytes_sent(self) -> int:
        """Total bytes sent to the front end (JSON + buffers), initial states included."""
        return sum(m.nbytes for m in self.messages)

    def reset_counters(self) -> None:
        self.messages.clear()
        self.received.clear()

    def check(self) -> None:
        """Raise HarnessError if anything went wrong so far (then forget it)."""
        if not self.page.is_closed():
            with contextlib.suppress(Exception):  # let late events (timers) arrive
                self.errors.extend(self.page.evaluate("() => window.__harness.settle()"))
        if self.errors:
            errors, self.errors = self.errors, []
            raise HarnessError("browser/widget errors:\n" + "\n".join(errors))


@contextlib.contextmanager
def offline_page(browser: Any, path: Any, viewport: dict | None = None):
    """A page of ``browser`` opened on the file ``path`` with the network off;
    yields ``(page, requests, errors)``: every URL requested and every console
    error or page error, for the caller to assert on. Closes its context."""
    context = browser.new_context(viewport=viewport or {"width": 1100, "height": 800}, offline=True)
    requests: list[str] = []
    errors: list[str] = []
    try:
        page = context.new_page()
        page.on("request", lambda r: requests.append(r.url))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.as_uri())
        yield page, requests, errors
    finally:
        context.close()
