// Drawing a graph (`kiln viz`, the playground): the drawing model and its DOT and HTML/SVG
// renderers. They read the IR only, so any page that holds a Graph can draw it.
export { vizModel, countOps, type VizBlock, type VizNode, type VizKind } from './model.js';
export { toDot } from './dot.js';
export { toHtml } from './html.js';
