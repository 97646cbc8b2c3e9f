// The ensemble Sankey's parts, registered under its kind (js/kit/registry.js).
import { registerView } from "../kit/registry.js";
import { sankeySVG } from "./figure.js";
import { localSankeyModel } from "./local.js";
import { renderSankey } from "./view.js";

registerView("sankey", { render: renderSankey, figure: sankeySVG, mount: (el, payload) => renderSankey({ model: localSankeyModel(payload), el }) });
