"""HTML: one self-contained page with the interactive view, no kernel, no network.

The page inlines the view's CSS, the standalone bundle
(``cctviz/static/cctviz-standalone.js``, defining ``cctvizStandalone.mount``),
the font, and the payload as JSON; it loads nothing from anywhere. Names come
from profiles and are untrusted: the JSON is escaped so that no name can end
its ``<script>`` element, and the bundle sets text with ``textContent`` only.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ExportError
from .engine import STATIC
from .payload import ViewLike, payload

#: the bundle that mounts the interactive view in a page
STANDALONE_BUNDLE = STATIC / "cctviz-standalone.js"
#: the view's stylesheet
CSS = STATIC / "cctviz.css"
#: the global object the standalone bundle defines
GLOBAL = "cctvizStandalone"

_MOUNT = f"""(function () {{
  var payload = JSON.parse(document.getElementById("cctviz-payload").textContent);
  {GLOBAL}.mount(document.getElementById("cctviz-root"), payload);
}})();"""

_PAGE_CSS = """html, body { margin: 0; padding: 0; background: #fff; }
body { font-family: 'Cctviz Sans', 'Liberation Sans', Arial, Helvetica, sans-serif; }
#cctviz-root { box-sizing: border-box; width: 100vw; height: 100vh; padding: 8px; }"""


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        raise ExportError(
            f"the {what} {path} cannot be read ({e.strerror or e}): it is built by"
            " `pip install -e .` or `npm run build` in the repository"
        ) from None


def script_json(value: Any) -> str:
    """``value`` as JSON that is safe inside a ``<script>`` element.

    ``<``, ``>`` and ``&`` become ``\\u`` escapes, so neither ``</script>``
    nor ``<!--`` can appear whatever the strings hold; ``JSON.parse`` reads
    the same value back.

    Example:
        >>> script_json({"name": "</script><img src=x>"})
        '{"name":"\\\\u003c/script\\\\u003e\\\\u003cimg src=x\\\\u003e"}'
    """
    text = json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _inline_script(js: str) -> str:
    # a bundle's string literal may hold "</script" or "<!--": in JS "\x3C" is "<"
    for bad in ("</script", "</SCRIPT", "<!--"):
        js = js.replace(bad, "\\x3C" + bad[1:])
    if "</script" in js.lower():
        raise ExportError(
            f"{STANDALONE_BUNDLE.name} holds '</script' in a form that cannot be inlined"
        )
    return js


def default_title(view: Any) -> str:
    """The page title when none is given: the profile's file name, else "cctviz".

    Example:
        >>> import cctviz
        >>> t = cctviz.Tree.from_parents([-1], ["main"], {"time": [1.0]}, meta={"source": "/x/run.json"})
        >>> default_title(cctviz.CCTView(t))
        'run.json'
    """
    tree = getattr(view, "tree", None)
    source = (getattr(tree, "meta", None) or {}).get("source")
    if source:
        return os.path.basename(os.path.normpath(str(source))) or str(source)
    return "cctviz"


def page(data: Mapping[str, Any], title: str) -> str:
    """The standalone page (text) showing ``data``, a payload of :func:`~cctviz.export.payload`.

    Example:
        >>> import cctviz
        >>> from cctviz.export.payload import payload
        >>> view = cctviz.CCTView(cctviz.Tree.from_parents([-1], ["main"], {"time": [1.0]}))
        >>> text = page(payload(view), "run 3")
        >>> text.startswith("<!doctype html>") and "<title>run 3</title>" in text
        True
    """
    css = _read(CSS, "stylesheet")
    if "</style" in css.lower():
        raise ExportError(f"{CSS} holds '</style' and cannot be inlined")
    js = _inline_script(_read(STANDALONE_BUNDLE, "standalone bundle"))
    return "\n".join(
        [
            "<!doctype html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            '<meta name="generator" content="cctviz">',
            f"<title>{html.escape(title)}</title>",
            f"<style>\n{_PAGE_CSS}\n</style>",
            f"<style>\n{css}\n</style>",
            "</head>",
            "<body>",
            '<div id="cctviz-root"></div>',
            f'<script type="application/json" id="cctviz-payload">{script_json(data)}</script>',
            f"<script>\n{js}\n</script>",
            f"<script>\n{_MOUNT}\n</script>",
            "</body>",
            "</html>",
            "",
        ]
    )


def to_html(view: ViewLike, **options: Any) -> str:
    """The standalone interactive page of ``view`` as it is now.

    ``options``: the drawing options (:func:`cctviz.export.payload.drawing_options`);
    the page's title is ``title`` or the profile's file name.

    Example:
        >>> import cctviz
        >>> view = cctviz.CCTView(cctviz.Tree.from_parents([-1], ["main"], {"time": [1.0]}))
        >>> "LULESH, 64 ranks" in to_html(view, title="LULESH, 64 ranks")
        True
    """
    p = payload(view, **options)
    return page(p, p["options"]["title"] or default_title(view))
