// Every view kind: one line per view (its js/<kind>/index.js registers its parts
// with js/kit/registry.js). Adding a view adds its folder and a line here.
import "./cct/index.js";
import "./sankey/index.js";
import "./profiles/index.js";
import "./timeline/index.js";
