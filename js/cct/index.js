// The CCT view's parts, registered under its kind (js/kit/registry.js).
import { registerView } from "../kit/registry.js";
import { cctSVG } from "./figure.js";
import { localModel } from "./local.js";
import { renderCCT } from "./view.js";

registerView("cct", { render: renderCCT, figure: cctSVG, mount: (el, payload) => renderCCT({ model: localModel(payload), el }) });
