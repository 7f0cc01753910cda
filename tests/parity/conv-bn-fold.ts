// Golden family 'conv_bn_fold' (PyTorch's fuse_conv_bn_eval / fuse_linear_bn_eval): each case is
// built as a graph conv2d|linear → batch_norm with the case's parameters, optimized with
// `freeze` + `fold-conv-bn` / `fold-linear-bn`, and checked three ways: the folded weight and
// bias against PyTorch's, the unfolded graph's output against `output_*_then_bn`, and the folded
// graph's output against `output_fused`. The folded graph must hold no batch_norm.

import { tensor } from '@kiln/core';
import { GraphBuilder, walkNodes, type Graph, type TensorData } from '@kiln/ir-spec';
import { createModel } from '@kiln/runtime';
import { runPipeline } from '@kiln/compiler';
import type { GoldenCase, GoldenTensor, Tol } from './golden.js';
import { expectClose } from './golden.js';

const asData = (g: GoldenTensor): TensorData => ({ dtype: 'float32', shape: [...g.shape], data: new Float32Array(g.data!.map(Number)) });
const asTensor = (data: ArrayLike<number>, shape: readonly number[]) => tensor(Array.from(data), { shape: [...shape] });

function buildGraph(c: GoldenCase): Graph {
  const params = c.params as Record<string, GoldenTensor | null>;
  const isConv = 'conv' in c.attrs;
  const p = isConv ? 'conv' : 'linear';
  const b = new GraphBuilder(c.name);
  const x = b.input('input', { kind: 'tensor', dtype: 'float32', shape: [...c.inputs[0].shape] });
  const w = b.param(`${p}.weight`, asData(params[`${p}.weight`]!));
  const bias = params[`${p}.bias`] ? b.param(`${p}.bias`, asData(params[`${p}.bias`]!)) : null;
  const bn = ['running_mean', 'running_var', 'weight', 'bias'].map((k) => b.param(`bn.${k}`, asData(params[`bn.${k}`]!)));
  let y;
  if (isConv) {
    const a = c.attrs.conv as { stride: number[]; padding: number[]; groups: number };
    const [ph, pw] = a.padding;
    y = b.op1('conv2d', [x, w, bias], { stride: a.stride, padding: [ph, pw, ph, pw], groups: a.groups });
  } else {
    y = b.op1('linear', [x, w, bias]);
  }
  b.meta = { scope: 'bn' };
  b.output('output', b.op1('batch_norm', [y, ...bn], { eps: (c.attrs.bn as { eps: number }).eps }));
  return b.build();
}

/** Checks one conv_bn_fold case; returns the number of tensors compared. */
export function runConvBnFold(c: GoldenCase, tol: Tol): number {
  const g = buildGraph(c);
  const isConv = 'conv' in c.attrs;
  const results = c.results as Record<string, GoldenTensor>;
  const folded = runPipeline(g, { passes: ['freeze', isConv ? 'fold-conv-bn' : 'fold-linear-bn', 'eliminate-dead-code'], verifyEach: true }).graph;
  const ops = [...walkNodes(folded.body)].map((n) => n.op);
  if (ops.includes('batch_norm')) throw new Error(`${c.name}: batch_norm survived folding: ${ops.join(', ')}`);
  const w = folded.tensors.get('bn.folded_weight'), b = folded.tensors.get('bn.folded_bias');
  if (!w || !b) throw new Error(`${c.name}: no folded weight/bias in the tensor table (${[...folded.tensors.keys()].join(', ')})`);
  let n = 0;
  expectClose(asTensor(w.data, w.shape), results['fused.weight'], tol, `${c.name} fused.weight`);
  n++;
  expectClose(asTensor(b.data, b.shape), results['fused.bias'], tol, `${c.name} fused.bias`);
  n++;
  const input = { data: new Float32Array(c.inputs[0].data!.map(Number)), shape: [...c.inputs[0].shape], dtype: 'float32' as const };
  const [before] = createModel(g).runSync([input]);
  const [after] = createModel(folded).runSync([input]);
  expectClose(asTensor(before.data, before.shape), results[isConv ? 'output_conv_then_bn' : 'output_linear_then_bn'], tol, `${c.name} unfolded output`);
  n++;
  expectClose(asTensor(after.data, after.shape), results.output_fused, tol, `${c.name} folded output`);
  n++;
  return n;
}
