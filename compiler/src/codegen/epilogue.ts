// Activations fused into a kernel's epilogue (fused_conv2d, fused_linear) and the element bodies
// of fused_elementwise, compiled from the op entries' scalars (codegen/scalar.ts). Invariant: the
// WGSL of an activation or body node comes from the same entry its standalone op's kernel
// compiles, so they compute the same thing.

import type { Value } from '@kiln/ir-spec';
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

/**
 * fused_elementwise: its element body in the elementwise shell — argument k is the element of
 * input k, each body node a `let t<k>` from its entry (the same WgslScalars an op's own kernel
 * uses), a literal node a WGSL literal, and the yield is stored.
 */
export const fusedElementwiseKernel: KernelGen = (sig, d) => {
  const body = sig.regions?.[0];
  if (!body) throw new Error('fused_elementwise: the kernel signature has no element body (KernelSig.regions)');
  const R = sig.outputs[0].rank;
  const lines = [
    'let i = wg * 64u + lid;',
    `if (i >= ${product(Array.from({ length: R }, (_, k) => d.outDim(0, k)))}) { return; }`,
    unflatten('i', R, (k) => d.outDim(0, k)),
  ];
  const code = new Map<Value, string>();
  sig.inputs.forEach((t, j) => {
    lines.push(broadcastOffset(`p${j}`, d, j, t!.rank, R));
    lines.push(`let x${j} = in${j}[p${j}];`);
    code.set(body.args[j], `x${j}`);
  });
  const scalars = new WgslScalars();
  let k = 0; // op nodes only: t<k> is the k-th op of the body
  body.nodes.forEach((n) => {
    if (n.op === 'constant') { code.set(n.outputs[0], literal(n.attrs.value as number, 'f32')); return; }
    const r = scalars.apply(n.op, n.inputs.map((v) => code.get(v!)!), n.attrs, 'f32', lines, `t${k}_`);
    lines.push(`let t${k} = ${r.bool ? `select(0.0, 1.0, ${r.code})` : r.code};`);
    code.set(n.outputs[0], `t${k++}`);
  });
  lines.push(`out0[i] = ${code.get(body.yields[0])!};`);
  return { body: lines.filter((l) => l).join('\n'), grid: { tile: [], per: 64 }, decls: scalars.helpers() };
};
