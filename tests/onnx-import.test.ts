// jit.loadOnnx on PyTorch 1.13's ONNX exports (scripts/golden/onnx_import.py writes them and
// PyTorch's outputs to tests/golden-kiln/onnx/): convnets with BatchNormalization and Pad, a
// ResNet (Shape/Gather/Concat/Reshape chains), an MLP (Gelu as Erf), an LSTM, a two-layer GRU, bidirectional LSTM and GRU, transformer
// encoder layers (LayerNormalization at opset 17, its ReduceMean decomposition at 13) and a
// scripted model with If and Loop; opsets 13–17, constant folding on and off. Each imported
// graph must give PyTorch's outputs at both stored batch sizes, after -O2 too, from a .tsgraph
// too; unsupported operators fail naming the node, op type and opset.
import { describe, it, expect } from 'vitest';
import { readFileSync, readdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jit, tensor, type Tensor } from 'kiln';
import { expectClose } from './helpers/onnx.js';

const DIR = fileURLToPath(new URL('./golden-kiln/onnx/', import.meta.url));
interface Case { input: { shape: number[]; data: number[] }; output: { shape: number[]; data: number[] } }
interface Golden { model: string; opset: number; constant_folding: boolean; onnx_ops: string[]; cases: Case[] }
const goldens: Golden[] = readdirSync(DIR).filter((f) => f.endsWith('.json') && !f.startsWith('unsupported')).sort().map((f) => JSON.parse(readFileSync(join(DIR, f), 'utf8')) as Golden);
const t = (x: { shape: number[]; data: number[] }): Tensor => tensor(Float32Array.from(x.data), { shape: x.shape });

describe('jit.loadOnnx imports PyTorch 1.13 exports with PyTorch\'s numbers', () => {
  it('has the golden models', () => expect(goldens.length).toBeGreaterThanOrEqual(10));

  it.each(goldens.map((g) => [g.model, g] as const))('%s', async (name, g) => {
    const m = jit.loadOnnx(join(DIR, `${name}.onnx`));
    expect(g.cases.length).toBeGreaterThanOrEqual(2);
    const opt = jit.optimizeForInference(m);
    for (const c of g.cases) {
      expectClose(m.forward(t(c.input)) as Tensor, t(c.output), 1e-4, `${name} [${c.input.shape}]`);
      expectClose(opt.forward(t(c.input)) as Tensor, t(c.output), 1e-4, `${name} -O2 [${c.input.shape}]`);
    }
    // Initializers are named parameters (PyTorch's names, sanitized); the arith model has none.
    expect(m.graph.inputs.some((i) => i.kind === 'param')).toBe(!name.startsWith('arith'));
    // WGSL codegen takes the imported graph as any other.
    expect(jit.generateWgsl(opt.graph).kernels.length).toBeGreaterThan(0);
    // The .tsgraph round trip runs as the import did.
    const path = join(mkdtempSync(join(tmpdir(), 'kiln-onnx-')), `${name}.tsgraph`);
    await opt.save(path);
    const loaded = await jit.load(path);
    const c = g.cases[0];
    expectClose(loaded.forward(t(c.input))[0], t(c.output), 1e-4, `${name} .tsgraph`);
  });
});

describe('jit.loadOnnx errors and inputs', () => {
  it('an operator Kiln does not import fails naming the node, its op type and the opset', () => {
    expect(() => jit.loadOnnx(join(DIR, 'unsupported_celu_opset17.onnx'))).toThrow(/node '\/Celu' \(Celu, opset 17\) is not supported; Kiln imports .*Conv.*LSTM/);
  });

  it('bytes that are not an ONNX model fail saying so', () => {
    expect(() => jit.loadOnnx(Uint8Array.of(0xff, 0xff, 0xff, 0x01))).toThrow(/loadOnnx: the bytes are not an ONNX ModelProto/);
  });

  it('takes bytes as well as a path, keeps dim_params as Kiln symbols and covers the operators PyTorch emits', () => {
    const m = jit.loadOnnx(new Uint8Array(readFileSync(join(DIR, 'encoder_opset17.onnx'))));
    expect(m.graph.inputs[0].value.type).toMatchObject({ shape: ['batch', 'time', 16] });
    const ops = jit.supportedOnnxOps();
    for (const op of ['Conv', 'BatchNormalization', 'Gemm', 'MatMul', 'Relu', 'Erf', 'MaxPool', 'AveragePool', 'GlobalAveragePool',
      'Flatten', 'Reshape', 'Transpose', 'Add', 'Mul', 'Div', 'Sub', 'Pow', 'Sqrt', 'Softmax', 'LayerNormalization', 'ReduceMean',
      'Gather', 'Concat', 'Slice', 'Shape', 'Unsqueeze', 'Squeeze', 'Constant', 'ConstantOfShape', 'Cast', 'Where', 'LSTM', 'GRU', 'If', 'Loop']) {
      expect(ops).toContain(op);
    }
  });
});
