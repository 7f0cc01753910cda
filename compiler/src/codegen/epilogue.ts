// Activations fused into a kernel's epilogue (fused_conv2d, fused_linear) and the programs of
// fused_elementwise, compiled from the op entries' scalars (codegen/scalar.ts). Invariant: the
// WGSL of an activation or instruction comes from the same entry its standalone op's kernel
// compiles, so they compute the same thing.

import { WgslScalars } from './scalar.js';
import { literal, product, unflatten, broadcastOffset, type KernelGen } from './shell.js';

/** `act` applied to the f32 expression `e` ('none' leaves it). */
export function activation(act: string, e: string): string {
  return new WgslScalars().activation(act, e);
}

/** Helper functions the activation needs (empty for none). */
export function activationHelpers(act: string): string {
  const s = new WgslScalars();
  s.activation(act, 'x');
  return s.helpers();
}

/** fused_elementwise: the program's instructions as `let t<k>` lines in the elementwise shell. */
export const fusedElementwiseKernel: KernelGen = (sig, d) => {
  const program = sig.attrs.program as readonly (readonly (string | number)[])[];
  const R = sig.outputs[0].rank;
  const lines = [
    'let i = wg * 64u + lid;',
    `if (i >= ${product(Array.from({ length: R }, (_, k) => d.outDim(0, k)))}) { return; }`,
    unflatten('i', R, (k) => d.outDim(0, k)),
  ];
  sig.inputs.forEach((t, j) => {
    lines.push(broadcastOffset(`p${j}`, d, j, t!.rank, R));
    lines.push(`let x${j} = in${j}[p${j}];`);
  });
  const operand = (a: string | number) => (typeof a === 'number' ? literal(a, 'f32') : a);
  const scalars = new WgslScalars();
  program.forEach(([op, ...args], k) => {
    const r = scalars.apply(String(op), args.map(operand), {}, 'f32', lines, `t${k}_`);
    lines.push(`let t${k} = ${r.bool ? `select(0.0, 1.0, ${r.code})` : r.code};`);
  });
  lines.push(`out0[i] = t${program.length - 1};`);
  return { body: lines.filter((l) => l).join('\n'), grid: { tile: [], per: 64 }, decls: scalars.helpers() };
};
