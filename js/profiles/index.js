// The profiles view's parts, registered under its kind (js/kit/registry.js).
import { registerView } from "../kit/registry.js";
import { profilesSVG } from "./figure.js";
import { mountProfiles } from "./local.js";
import { renderProfiles } from "./view.js";

registerView("profiles", { render: renderProfiles, figure: profilesSVG, mount: mountProfiles });
