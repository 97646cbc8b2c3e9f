// Entry point of the cctviz front-end bundle.
//
// esbuild bundles this file (and everything it imports, d3-* modules included)
// into cctviz/static/cctviz.js as a single ES module that the Python widgets
// load as their anywidget `_esm`; nothing is ever fetched from a CDN.
// The views' `render` functions are added here as they are implemented.

export { MISSING, formatMetric, readColumn } from "./format.js";
