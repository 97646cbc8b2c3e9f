// A stand-in for cctviz/static/cctviz-standalone.js (tests/export only, until the
// real bundle is built): lists the node names, set with textContent.
(function () {
  "use strict";
  function mount(el, payload) {
    var d = payload.data, list = el.ownerDocument.createElement("ul");
    var bytes = Uint8Array.from(d.name_bytes), dec = new TextDecoder();
    for (var i = 0; i < d.n; i++) {
      var li = el.ownerDocument.createElement("li");
      li.textContent = dec.decode(bytes.subarray(d.name_offsets[i], d.name_offsets[i + 1]));
      list.appendChild(li);
    }
    el.appendChild(list);
    return function () { el.removeChild(list); };
  }
  globalThis.cctvizStandalone = { mount: mount };
})();
