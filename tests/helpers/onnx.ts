// Running ONNX models in ONNX Runtime (onnxruntime-node, CPU) for the ONNX tests: feeds Kiln
// tensors and numbers, returns Kiln tensors, and compares with a tolerance.
import ort from 'onnxruntime-node';
import { expect } from 'vitest';
import { tensor, type Tensor } from 'kiln';

export type Feed = Tensor | number | boolean;

function ortTensor(v: Feed): ort.Tensor {
  if (typeof v === 'number') return new ort.Tensor('int32', Int32Array.of(v), []);
  if (typeof v === 'boolean') return new ort.Tensor('bool', Uint8Array.of(v ? 1 : 0), []);
  const dims = [...v.shape] as number[];
  if (v.dtype === 'int32') return new ort.Tensor('int32', Int32Array.from(v.toArray()), dims);
  if (v.dtype === 'bool') return new ort.Tensor('bool', Uint8Array.from(v.toArray()), dims);
  return new ort.Tensor('float32', Float32Array.from(v.toArray()), dims);
}

/** Runs the model once; returns its outputs as float32 Kiln tensors, in output order. */
export async function runOrt(session: ort.InferenceSession, inputs: readonly Feed[]): Promise<Tensor[]> {
  const feeds: Record<string, ort.Tensor> = {};
  session.inputNames.forEach((name, i) => { feeds[name] = ortTensor(inputs[i]); });
  const out = await session.run(feeds);
  return session.outputNames.map((name) => {
    const t = out[name];
    return tensor(Float32Array.from(t.data as ArrayLike<number>, Number), { shape: [...t.dims] as number[] });
  });
}

export const ortSession = (bytes: Uint8Array) => ort.InferenceSession.create(bytes);

/** |got - want| ≤ tol·max(1, |want|) elementwise, and equal shapes. */
export function expectClose(got: Tensor, want: Tensor, tol: number, what = ''): void {
  expect(got.shape, what).toEqual(want.shape);
  const a = got.toArray(), b = want.toArray();
  let worst = 0;
  for (let i = 0; i < b.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]) / Math.max(1, Math.abs(b[i])));
  expect(worst, what).toBeLessThanOrEqual(tol);
}
