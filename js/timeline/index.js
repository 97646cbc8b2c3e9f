// The timeline view's parts, registered under its kind (js/kit/registry.js).
import { registerView } from "../kit/registry.js";
import { timelineSVG } from "./figure.js";
import { mountTimeline } from "./local.js";
import { renderTimeline } from "./view.js";

registerView("timeline", { render: renderTimeline, figure: timelineSVG, mount: mountTimeline });
