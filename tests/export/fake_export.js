// A stand-in for cctviz/static/cctviz-export.js, used by tests/export only while
// the real bundle is not built. It honours the contract's interface and the
// properties the tests check (an SVG in pt with one <text> per node name), and
// nothing else: no layout, no colours.
(function () {
  "use strict";
  function esc(s) {
    return String(s)
      .replace(/&/g, "&amp;")
      .replace(/</g, "&lt;")
      .replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;");
  }
  function utf8(bytes) {
    var s = "";
    for (var i = 0; i < bytes.length; i++) s += "%" + (bytes[i] < 16 ? "0" : "") + bytes[i].toString(16);
    return decodeURIComponent(s);
  }
  function names(data) {
    var out = [];
    for (var i = 0; i < data.n; i++) {
      out.push(utf8(data.name_bytes.slice(data.name_offsets[i], data.name_offsets[i + 1])));
    }
    return out;
  }
  function num(v) {
    return String(Math.round(v * 100) / 100);
  }
  function renderSVG(json) {
    var p = JSON.parse(json);
    if (p.kind !== "cct") throw new Error("unknown payload kind " + p.kind);
    var o = p.options, d = p.data, fs = o.fontSize, line = fs * 1.4;
    var top = o.title ? 2 * line : line;
    var naturalW = 300, naturalH = top + d.n * line + line;
    var w = o.width || naturalW;
    var h = o.height || (naturalH * w) / naturalW;
    var sel = {};
    (p.state.selection || []).forEach(function (id) { sel[id] = true; });
    var parts = [
      '<svg xmlns="http://www.w3.org/2000/svg" class="cctviz cctviz-cct" width="' + num(w) +
        'pt" height="' + num(h) + 'pt" viewBox="0 0 ' + num(naturalW) + " " + num(naturalH) + '">',
    ];
    if (o.background === "white") parts.push('<rect width="100%" height="100%" fill="#ffffff"/>');
    var font = "font-family=\"'Liberation Sans', Arial, Helvetica, sans-serif\" font-size=\"" + num(fs) + '"';
    if (o.title) parts.push("<text x=\"4\" y=\"" + num(line) + '" font-weight="bold" ' + font + ">" + esc(o.title) + "</text>");
    parts.push('<g role="tree">');
    names(d).forEach(function (name, i) {
      var id = d.id[i], y = top + (i + 1) * line;
      var mark = o.highlight && sel[id] ? ' class="selected"' : "";
      parts.push(
        '<g role="treeitem" data-id="' + id + '"' + mark + ">" +
          '<circle cx="' + num(6 + 10 * d.depth[i]) + '" cy="' + num(y - fs / 3) + '" r="3" fill="#4c78a8"/>' +
          '<text x="' + num(12 + 10 * d.depth[i]) + '" y="' + num(y) + '" ' + font + ">" + esc(name) + "</text></g>"
      );
    });
    parts.push("</g></svg>");
    return parts.join("");
  }
  globalThis.cctvizExport = { renderSVG: renderSVG };
})();
