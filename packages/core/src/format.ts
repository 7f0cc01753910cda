// PyTorch-like printing: `tensor([[1.0000, 2.0000], ...], requiresGrad=true)`, summarised
// with `...` beyond 1000 elements.

import { numel } from '@kiln/ir-spec';
import type { Tensor } from './tensor.js';

const EDGE = 3;

export function formatTensor(t: Tensor): string {
  // A GPU tensor's values would need a wait: print what is known without reading it.
  if (t.device === 'webgpu') return `tensor(<on webgpu: await t.toArrayAsync()>, shape=[${t.shape.join(', ')}], dtype=${t.dtype}, device='webgpu')`;
  const d = t.data, shape = t.shape;
  const summarize = numel(shape) > 1000;
  const fmt = (v: number): string => {
    if (t.dtype === 'bool') return v ? 'true' : 'false';
    if (t.dtype === 'int32') return String(v);
    if (!Number.isFinite(v)) return Number.isNaN(v) ? 'nan' : v > 0 ? 'inf' : '-inf';
    return Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-4) ? v.toExponential(4) : v.toFixed(4);
  };
  const rec = (dim: number, off: number, indent: string): string => {
    if (dim === shape.length) return fmt(d[off]);
    const step = numel(shape.slice(dim + 1));
    const n = shape[dim];
    const idx = summarize && n > 2 * EDGE
      ? [...Array(EDGE).keys(), -1, ...Array.from({ length: EDGE }, (_, i) => n - EDGE + i)]
      : [...Array(n).keys()];
    const parts = idx.map((i) => (i < 0 ? '...' : rec(dim + 1, off + i * step, indent + ' ')));
    const sep = dim === shape.length - 1 ? ', ' : ',\n' + indent + ' ';
    return `[${parts.join(sep)}]`;
  };
  const extras: string[] = [];
  if (t.dtype !== 'float32') extras.push(`dtype=${t.dtype}`);
  if (t.gradFn) extras.push(`gradFn=${t.gradFn.name}`);
  else if (t.requiresGrad) extras.push('requiresGrad=true');
  return `tensor(${rec(0, 0, '       ')}${extras.map((e) => ', ' + e).join('')})`;
}
