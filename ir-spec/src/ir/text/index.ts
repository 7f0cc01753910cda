// The IR text form: printer, parser and their shared lexical rules (grammar: ir-spec/SPEC.md).
export { printGraph, printNode } from './printer.js';
export { parseGraph, type ParseOptions } from './parser.js';
export { IRParseError } from './errors.js';
export { nameValues } from './names.js';
export { printType, printAttrValue, printDim, printNumber } from './format.js';
