// kiln — what users import: the eager library and the `jit` API (trace, load; script and the
// optimizer arrive with later issues).
export * from '@kiln/core';
export * as jit from './jit/index.js';
export * as profiler from './profiler/index.js';
export { makeDot, autogradGraph, type MakeDotOptions, type AutogradVizNode, type AutogradVizKind } from './viz/autograd-graph.js';
