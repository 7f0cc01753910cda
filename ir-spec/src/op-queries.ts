// The tables passes, code generators and devices use, DERIVED from the op entries (never kept
// beside them): which ops are views, which may be fused per element, which may be an epilogue
// activation, which need data-dependent dims read on the host. Invariant: each answer is a
// function of the entries alone, so adding an op means editing its entry and nothing here.

import { allOps, getOp, hasOp, type DataDims, type OpDef } from './op-def.js';
import { scalarFn } from './scalar.js';

/** Every elementwise entry (each has a scalar formula). */
export function elementwiseOps(): OpDef[] {
  return allOps().filter((d) => d.elementwise);
}

/**
 * The JS function one element of `op` computes with `attrs` (its entry's scalar: the
 * primitive, or the compiled formula).
 *
 * @example scalarOf('rsqrt')(4) // 0.5
 */
export function scalarOf(op: string, attrs: Readonly<Record<string, unknown>> = {}): (...xs: number[]) => number {
  return scalarFn(getOp(op), attrs, getOp);
}

/** Whether `op` may run as a view of its first input (reshape, dropout). */
export function isViewOp(op: string): boolean {
  return hasOp(op) && getOp(op).view !== undefined;
}

/** Whether this node of `op` is a view: the result shares its first input's buffer. */
export function isViewNode(op: string, attrs: Readonly<Record<string, unknown>>): boolean {
  const view = hasOp(op) ? getOp(op).view : undefined;
  return !!view && view(attrs);
}

/** The data-dependent dims hook of `op` (masked_select), if it has one. */
export function dataDimsOf(op: string): DataDims | undefined {
  return hasOp(op) ? getOp(op).dataDims : undefined;
}

/** Ops that may be an activation epilogue of fused_conv2d / fused_linear, sorted. */
export function epilogueActivations(): string[] {
  return allOps().filter((d) => d.epilogue).map((d) => d.name).sort();
}

/** Whether epilogue activation `act` is non-decreasing ('none' is). */
export function isNonDecreasing(act: string): boolean {
  return act === 'none' || (hasOp(act) && getOp(act).epilogue?.nonDecreasing === true);
}

const F32 = { dtype: 'float32', shape: [] } as const;

/**
 * Whether `op` can be a node of a fused_elementwise element body: an elementwise entry with a
 * scalar, one or two inputs, no attributes, and float32 results from float32 inputs.
 */
export function isFusable(op: string): boolean {
  if (!hasOp(op)) return false;
  const d = getOp(op);
  if (!d.elementwise || !d.scalar || d.inputs.length < 1 || d.inputs.length > 2) return false;
  const attrs = d.attrs.safeParse({});
  if (!attrs.success || Object.keys(attrs.data as object).length) return false;
  return d.infer(d.inputs.map(() => F32), attrs.data)[0].dtype === 'float32';
}

/** Every fusable op (see isFusable), sorted. */
export function fusableOps(): string[] {
  return allOps().map((d) => d.name).filter(isFusable).sort();
}
