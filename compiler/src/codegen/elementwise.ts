// Elementwise ops: ONE kernel shell with broadcasting index math (one output element per
// thread) around the op's scalar, compiled from its ir-spec entry by codegen/scalar.ts (a
// primitive's template from codegen/ops, or its formula). Invariant: operands are converted to
// the compute type before the scalar sees them, and the store converts the result to the
// output's storage type; no op's formula is written here.

import { getOp, isFloating, type DType } from '@kiln/ir-spec';
import { TEMPLATES, type Wt } from './ops/index.js';
import { WgslScalars } from './scalar.js';
import { broadcastOffset, product, storageType, unflatten, type KernelBody, type KernelGen, type KernelSig } from './shell.js';

const numericOf = (d: DType): Wt => (isFloating(d) ? 'f32' : 'i32');

/**
 * The compute type of an op's operands unless its template says otherwise: a bool result
 * (comparisons, logical_not) compares in the promoted input type; any other computes in the
 * output's type (bool as i32), so float-only ops (exp, div) compute in f32.
 */
export function operandType(op: string, ins: readonly DType[], out: DType): Wt {
  const own = TEMPLATES.get(op)?.operand;
  if (own) return own(ins, out);
  if (out === 'bool') return ins.some(isFloating) ? 'f32' : 'i32'; // float16/bfloat16 compare as f32 too
  return numericOf(out);
}

/** Converts `e` of type `from` to the stored type of `to`. */
function convert(e: string, from: Wt, to: DType, boolResult: boolean): string {
  if (boolResult) return `select(0u, 1u, ${e})`;
  if (to === 'bool') return `select(0u, 1u, ${e} != ${from}(0))`;
  const st = storageType(to);
  return st === from ? e : `${st}(${e})`;
}

/** Whether `op` has an elementwise WGSL kernel (every elementwise entry with a scalar does). */
export const hasElementwiseKernel = (op: string): boolean => !!getOp(op).elementwise && !!getOp(op).scalar;

/** The elementwise kernel of `sig` (one thread per output element, 64 per workgroup). */
export const elementwiseKernel: KernelGen = (sig: KernelSig, d) => {
  const out = sig.outputs[0];
  const ins = sig.inputs.map((t) => t!);
  const t = operandType(sig.op, ins.map((x) => x.dtype), out.dtype);
  const raw = TEMPLATES.get(sig.op)?.raw ?? [];
  const R = out.rank;
  const lines = [
    'let i = wg * 64u + lid;',
    `if (i >= ${product(Array.from({ length: R }, (_, k) => d.outDim(0, k)))}) { return; }`,
    unflatten('i', R, (k) => d.outDim(0, k)),
  ];
  const operands = ins.map((x, j) => {
    lines.push(broadcastOffset(`p${j}`, d, j, x.rank, R));
    const value = `in${j}[p${j}]`;
    return raw.includes(j) || storageType(x.dtype) === t ? value : `${t}(${value})`;
  });
  const scalars = new WgslScalars();
  const e = scalars.apply(sig.op, operands, sig.attrs, t, lines);
  lines.push(`out0[i] = ${convert(e.code, t, out.dtype, e.bool)};`);
  const body: KernelBody = { body: lines.filter((l) => l).join('\n'), grid: { tile: [], per: 64 }, decls: scalars.helpers() };
  return body;
};
