// A re-export: jit.script follows `export { x } from` to the declaring file.
export { block as residual } from './coverage-a-helpers.js';
