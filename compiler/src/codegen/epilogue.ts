// Activations fused into a kernel's epilogue (fused_conv2d, fused_linear) and the programs of
// fused_elementwise, written with the elementwise templates. Invariant: the WGSL of an activation
// or instruction is the same expression its standalone op's kernel uses (one template per op).

import { ELEMENTWISE, helpersOf } from './elementwise.js';
import { literal, product, unflatten, broadcastOffset, type KernelGen } from './shell.js';

/** `act` applied to the f32 expression `e` ('none' leaves it). */
export function activation(act: string, e: string): string {
  if (act === 'none') return e;
  return ELEMENTWISE[act].expr([`(${e})`], {}, 'f32');
}

/** Helper functions the activation needs (empty for none). */
export function activationHelpers(act: string): string {
  return act === 'none' ? '' : helpersOf([act]);
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
  program.forEach(([op, ...args], k) => lines.push(`let t${k} = ${ELEMENTWISE[String(op)].expr(args.map(operand), {}, 'f32')};`));
  lines.push(`out0[i] = t${program.length - 1};`);
  return { body: lines.filter((l) => l).join('\n'), grid: { tile: [], per: 64 }, decls: helpersOf(program.map(([op]) => String(op))) };
};
