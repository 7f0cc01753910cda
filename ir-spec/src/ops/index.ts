// Loads every op family so that the registry is complete once '@kiln/ir-spec' is imported.
export * as elementwise from './elementwise.js';
export * as activation from './activation.js';
export * as reduce from './reduce.js';
export * as shape from './shape.js';
export * as indexing from './indexing.js';
export * as linalg from './linalg.js';
export * as conv from './conv.js';
export * as pool from './pool.js';
export * as norm from './norm.js';
export * as fused from './fused.js';
export * as random from './random.js';
export * as sort from './sort.js';
export * as quant from './quant.js';
/** fused_elementwise's element body as the pre-region program form (decoder, kernel keys). */
export { bodyToProgram, programToBody, type LegacyInstruction } from './fused.js';
