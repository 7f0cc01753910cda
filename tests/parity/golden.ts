// Reading PyTorch's golden files (tests/golden, a verbatim copy of shared/golden) and comparing
// our tensors with theirs. int64 data becomes int32 (our index dtype).

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { autograd, mul, tensor, type Tensor } from '@kiln/core';

export const GOLDEN_DIR = fileURLToPath(new URL('../golden/ops/', import.meta.url));

export interface GoldenTensor {
  name?: string;
  shape: number[];
  dtype: 'float32' | 'int64' | 'int8' | 'bool';
  data?: (number | string)[];
  offset?: number;
  length?: number;
}
export interface Tol { rtol: number; atol: number }
export interface GoldenCase {
  name: string;
  op: string;
  call?: string;
  attrs: Record<string, any>;
  inputs: GoldenTensor[];
  output?: GoldenTensor | GoldenTensor[];
  grad_output?: GoldenTensor | GoldenTensor[] | null;
  grads?: { inputs: (GoldenTensor | null)[] } | null;
  extra_outputs?: Record<string, GoldenTensor>;
  tol?: Tol;
  notes?: string;
  [key: string]: any;
}
export interface GoldenFile { family: string; default_tol: Tol; cases: GoldenCase[]; [key: string]: any }

export function readGolden(family: string): GoldenFile {
  return JSON.parse(readFileSync(GOLDEN_DIR + family + '.json', 'utf8'));
}

const num = (v: number | string): number =>
  v === 'NaN' ? NaN : v === 'Infinity' ? Infinity : v === '-Infinity' ? -Infinity : Number(v);

/** A golden tensor as a Kiln tensor (int64 → int32, bool stays bool). */
export function fromGolden(g: GoldenTensor, opts: { requiresGrad?: boolean } = {}): Tensor {
  if (!g.data) throw new Error(`golden tensor ${g.name ?? ''} uses a sidecar stream; not supported by this reader`);
  const dtype = g.dtype === 'float32' ? 'float32' : g.dtype === 'bool' ? 'bool' : 'int32';
  return tensor(g.data.map(num), { shape: g.shape, dtype, requiresGrad: opts.requiresGrad && dtype === 'float32' });
}

/** Throws a readable message unless `got` matches `want` within tolerance (shape, dtype class, values). */
export function expectClose(got: Tensor | null | undefined, want: GoldenTensor, tol: Tol, what: string): number {
  if (!got) throw new Error(`${what}: got no tensor, expected shape [${want.shape}]`);
  if (got.shape.length !== want.shape.length || got.shape.some((d, i) => d !== want.shape[i])) {
    throw new Error(`${what}: shape [${got.shape}] != expected [${want.shape}]`);
  }
  const isFloat = want.dtype === 'float32';
  if (isFloat !== (got.dtype === 'float32')) throw new Error(`${what}: dtype ${got.dtype} does not match golden ${want.dtype}`);
  const g = got.toArray(), w = want.data!.map(num);
  let worst = 0;
  for (let i = 0; i < w.length; i++) {
    const diff = Math.abs(g[i] - w[i]);
    const ok = isFloat ? g[i] === w[i] || diff <= tol.atol + tol.rtol * Math.abs(w[i]) || (Number.isNaN(g[i]) && Number.isNaN(w[i])) : g[i] === w[i];
    if (!ok) throw new Error(`${what}: element ${i} is ${g[i]}, expected ${w[i]} (|diff| ${diff.toExponential(3)}, tol atol ${tol.atol} rtol ${tol.rtol})`);
    worst = Math.max(worst, diff);
  }
  return worst;
}

/**
 * The gradients of the golden grad_outputs' contraction with `outs` (Σ_k sum(out_k · go_k), float
 * outputs only) with respect to `targets`, as autograd gives them; null when nothing is differentiable.
 */
export function goldenGradients(outs: readonly Tensor[], gradOutputs: GoldenTensor | GoldenTensor[], targets: Tensor[]): (Tensor | null)[] | null {
  const gos = Array.isArray(gradOutputs) ? gradOutputs : [gradOutputs];
  let loss: Tensor | null = null;
  outs.forEach((o, k) => {
    if (!gos[k] || o.dtype !== 'float32') return;
    const term = mul(o, fromGolden(gos[k])).sum();
    loss = loss ? loss.add(term) : term;
  });
  if (!loss || !targets.length) return null;
  return autograd.grad(loss, targets, { allowUnused: true });
}
