// The IR: types, graphs, structural ops, typing, and the builder.
export * from './types.js';
export * from './graph.js';
export * from './builtins.js';
export * from './infer.js';
export * from './builder.js';
export * from './inline.js';
export * from './text/index.js';
export * from './dims.js';
export * from './verify.js';
export * from './bind-symbols.js';
export * from './buffer-updates.js';
export * from './debug-ir.js';
