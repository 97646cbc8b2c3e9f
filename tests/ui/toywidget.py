"""A tiny anywidget used to prove the browser test harnesses.

Self-contained (only anywidget and traitlets) so that it can also be copied into a
JupyterLab root and imported by a kernel there.
"""

from __future__ import annotations

import anywidget
import traitlets

ESM = r"""
function hex(view) {
  if (!(view instanceof DataView)) return "none";
  const u8 = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  return Array.from(u8, (b) => b.toString(16).padStart(2, "0")).join(" ");
}

function button(cls, text, onclick) {
  const b = document.createElement("button");
  b.className = cls;
  b.textContent = text;
  b.addEventListener("click", onclick);
  return b;
}

function span(cls) {
  const s = document.createElement("span");
  s.className = cls;
  return s;
}

export default {
  render({ model, el }) {
    const root = document.createElement("div");
    root.className = "toy";
    let renders = 0;
    const count = span("count"), items = span("items"), blob = span("blob");
    const label = span("label"), pong = span("pong");
    function draw() {
      count.textContent = String(model.get("count"));
      items.textContent = JSON.stringify(model.get("items"));
      blob.textContent = hex((model.get("blob") || {}).data);
      label.textContent = model.get("label");  // untrusted text: never innerHTML
      root.setAttribute("data-rendered", String(++renders));
    }
    root.append(
      button("inc", "+1", () => {
        model.set("count", model.get("count") + 1);
        model.save_changes();
      }),
      button("push", "push", () => {
        const old = model.get("items");
        model.set("items", [...old, old.length]);
        model.save_changes();
      }),
      button("reverse", "reverse bytes", () => {
        // JS -> Python binary: send the blob's bytes reversed, as a DataView.
        const v = model.get("blob").data;
        const u8 = new Uint8Array(v.buffer, v.byteOffset, v.byteLength).slice().reverse();
        model.set("blob", { ...model.get("blob"), data: new DataView(u8.buffer) });
        model.save_changes();
      }),
      button("ping", "ping", () => model.send({ ping: model.get("count") })),
      count, items, blob, label, pong,
    );
    model.on("msg:custom", (content) => { pong.textContent = String(content.pong); });
    model.on("change:count change:items change:blob change:label", draw);
    el.appendChild(root);
    draw();
  },
};
"""


class Toy(anywidget.AnyWidget):
    """Buttons bound to an Int, a List and a Dict holding a binary buffer."""

    _esm = ESM
    _css = ".toy { display: flex; gap: 4px; } .toy .count { font-weight: bold; }"
    count = traitlets.Int(0).tag(sync=True)
    items = traitlets.List(traitlets.Int()).tag(sync=True)
    blob = traitlets.Dict().tag(sync=True)  # {"data": bytes or memoryview, ...}
    label = traitlets.Unicode("").tag(sync=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.on_msg(self._on_custom)

    def _on_custom(self, widget, content, buffers):
        if "ping" in content:
            self.send({"pong": content["ping"] * 10})
