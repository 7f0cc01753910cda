// quantization.quantizeDynamic against PyTorch 1.13 (tests/golden-kiln/quantize_dynamic, from
// scripts/golden/quantize_dynamic.py): per-tensor and per-channel Linear, LSTM and GRU on each
// engine Debian's PyTorch has (onednn: activations in [0,127] as fbgemm; qnnpack: [0,255]).
// The issue allows one quantization step; the emulation is exact, so the check is float32
// rounding (1e-5): the int8 weights and scales are compared exactly.

import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { nn, quantization, tensor, type Tensor } from '@kiln/core';

interface GT { shape: number[]; dtype: string; data: number[] }
interface Case {
  name: string; kind: 'linear' | 'LSTM' | 'GRU'; engine: string; reduce_range: boolean; qscheme: 'per_tensor' | 'per_channel';
  attrs: Record<string, any>; state_dict: Record<string, GT>; input: GT; output: GT; output_float: GT;
  weight0_int?: GT; weight0_scale?: GT; state?: GT[]; states?: GT[];
}
const file = JSON.parse(readFileSync(new URL('./golden-kiln/quantize_dynamic/cases.json', import.meta.url), 'utf8')) as { cases: Case[] };
const T = (g: GT): Tensor => tensor(g.data, { shape: g.shape });

/** max |got − want|. */
function maxDiff(got: Tensor, want: GT): number {
  expect(got.shape).toEqual(want.shape);
  const a = got.toArray();
  return want.data.reduce((m, w, i) => Math.max(m, Math.abs(a[i] - w)), 0);
}

/** Holds a recurrent layer (quantizeDynamic swaps submodules only, as PyTorch). */
class Holder extends nn.Module {
  constructor(readonly rnn: nn.LSTM | nn.GRU) { super(); }
  forward(x: Tensor, s: any): any { return this.rnn.forward(x, s); }
}

function build(c: Case): nn.Module {
  const a = c.attrs;
  const camel = { numLayers: a.num_layers ?? 1, bidirectional: a.bidirectional ?? false };
  const m: nn.Module = c.kind === 'linear' ? new nn.Sequential(new nn.Linear(a.in_features, a.hidden), new nn.ReLU(), new nn.Linear(a.hidden, a.out_features))
    : c.kind === 'LSTM' ? new nn.LSTM(a.input_size, a.hidden_size, camel) : new nn.GRU(a.input_size, a.hidden_size, camel);
  m.loadStateDict(Object.fromEntries(Object.entries(c.state_dict).map(([k, v]) => [k, T(v)])), { strict: true });
  return c.kind === 'linear' ? m.eval() : new Holder(m as nn.LSTM).eval();
}

describe('quantizeDynamic matches PyTorch 1.13', () => {
  it('has cases for both engines and every layer kind', () => {
    expect(file.cases.length).toBeGreaterThanOrEqual(10);
    expect(new Set(file.cases.map((c) => c.kind))).toEqual(new Set(['linear', 'LSTM', 'GRU']));
  });
  for (const c of file.cases) {
    it(c.name, () => {
      const float = build(c);
      const layers = c.kind === 'linear' ? [nn.Linear] : c.kind === 'LSTM' ? [nn.LSTM] : [nn.GRU];
      const q = quantization.quantizeDynamic(float, { layers, dtype: 'qint8', qscheme: c.qscheme, reduceRange: c.reduce_range });
      expect(q).not.toBe(float);
      if (c.kind === 'linear') {
        const l0 = (q as nn.Sequential).get(0) as quantization.DynamicQuantizedLinear;
        expect(Array.from(l0.weight.toArray())).toEqual(c.weight0_int!.data);
        expect(Array.from(l0.weight_scale.toArray())).toEqual(c.weight0_scale!.data.map(Math.fround));
        const y = q.forward(T(c.input)) as Tensor;
        expect(maxDiff(y, c.output)).toBeLessThan(1e-5);
        // The float model is untouched and still gives PyTorch's float output.
        expect(maxDiff(float.forward(T(c.input)) as Tensor, c.output_float)).toBeLessThan(1e-5);
      } else {
        const st = c.state!.map(T);
        expect((q as Holder).rnn).toBeInstanceOf(c.kind === 'LSTM' ? quantization.DynamicQuantizedLSTM : quantization.DynamicQuantizedGRU);
        const [out, s] = (q as Holder).forward(T(c.input), (c.kind === 'LSTM' ? st : st[0]) as any) as [Tensor, Tensor | Tensor[]];
        // Far below one quantization step (1/127 of |h| < 1): every activation code equals PyTorch's.
        const step = 1e-5;
        expect(maxDiff(out, c.output)).toBeLessThan(step);
        const states = Array.isArray(s) ? s : [s];
        states.forEach((t, i) => expect(maxDiff(t, c.states![i])).toBeLessThan(step));
        const exact = maxDiff(out, c.output);
        console.log(`${c.name}: max |Kiln − PyTorch| = ${exact.toExponential(2)}`);
      }
    });
  }
  it('refuses other dtypes and layer kinds with a clear error', () => {
    const m = new nn.Sequential(new nn.Linear(4, 2));
    expect(() => quantization.quantizeDynamic(m, { dtype: 'float16' as any })).toThrow(/dtype 'float16' is not supported/);
    expect(() => quantization.quantizeDynamic(m, { layers: [nn.Conv2d as any] })).toThrow(/layers may hold nn.Linear, nn.LSTM and nn.GRU, got Conv2d/);
  });
  it('inplace swaps the layers of the model itself', () => {
    const m = new nn.Sequential(new nn.Linear(4, 2));
    const q = quantization.quantizeDynamic(m, { inplace: true });
    expect(q).toBe(m);
    expect(m.get(0)).toBeInstanceOf(quantization.DynamicQuantizedLinear);
    expect(m.get(0).toString()).toContain('dtype=torch.qint8');
  });
});
