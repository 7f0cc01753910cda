// Loads every op family so that the registry is complete once '@kiln/ir-spec' is imported.
export * as elementwise from './elementwise.js';
export * as reduce from './reduce.js';
export * as shape from './shape.js';
