// jit.compile's graphs on WebGPU (compile-run.ts runs them): a model of the eager WebGPU device
// with each node's WGSL kernel compiled at capture, and a call's values as Model.runDevice takes
// them. Invariant: a graph gets a GPU model only when every node has a kernel (random ops are
// drawn on the host by the device) and nothing in it reads a value back mid-run; otherwise
// GpuUnsupported says why, and the call runs eagerly.

/// <reference types="@webgpu/types" />
import { defaultGenerator, deviceTensor, scalarTensorGpu, Tensor, webGpuDevice } from '@kiln/core';
import { generateWgsl } from '@kiln/compiler';
import { getOp, numel, type Graph, type IRType } from '@kiln/ir-spec';
import { createModel, freshCopy, readsBack, type DeviceInput, type HostFunction, type InputValue, type Model } from '@kiln/runtime';

/** A graph the WebGPU device cannot run as one recorded sequence of kernels (then the call runs eagerly). */
export class GpuUnsupported extends Error {
  constructor(message: string, readonly where?: string) { super(message); }
}

/**
 * A model of the eager WebGPU device with a kernel for each of its nodes compiled now, or a
 * GpuUnsupported naming the node it cannot run without waiting or has no WGSL kernel for.
 */
export function gpuModel(graph: Graph, hostFunctions: Readonly<Record<string, HostFunction>>): Model {
  const number = graph.outputs.find((o) => holdsNumber(o.value.type));
  if (number) throw new GpuUnsupported(`output '${number.name}' is a number, which a compiled WebGPU graph would have to read back`);
  const reads = readsBack(graph);
  if (reads) throw new GpuUnsupported(`${reads.op} reads a value back from the GPU in the middle of the graph (a branch on a tensor, .item(), a size set by data), which a compiled WebGPU graph never waits for`, reads.meta.loc);
  const dev = webGpuDevice();
  const { kernels, unsupported } = generateWgsl(graph, { maxStorageBuffers: dev.gpu.limits.maxStorageBuffersPerShaderStage });
  const missing = unsupported.find((u) => !getOp(u.op).random); // random ops draw on the host (the device uploads the sample)
  if (missing) throw new GpuUnsupported(`op ${missing.op} has no WebGPU kernel for this graph (${missing.reason})`);
  for (const k of kernels) dev.addKernelNow(k);
  return createModel(graph, { device: dev, hostFunctions, generator: defaultGenerator });
}

function holdsNumber(t: IRType): boolean {
  return t.kind === 'scalar' || (t.kind === 'tuple' && t.elements.some(holdsNumber)) || (t.kind === 'list' && holdsNumber(t.element));
}

/** Copies (on the GPU, the tuner's own) of the call's values of `g`'s inputs, for timing after the call returned. */
export function inputCopies(g: Graph, valueOf: (input: string) => InputValue): DeviceInput[] {
  const dev = webGpuDevice();
  const decl = g.inputs.filter((i) => i.kind === 'input');
  return onDeviceFor(decl, decl.map((i) => valueOf(i.name))).map((v) => (typeof v === 'object' ? freshCopy(dev, v) : v));
}

/** Inputs of `g`'s types (training graphs: exact shapes) filled with 0.5, for timing its candidates. */
export function syntheticOnGpu(g: Graph): DeviceInput[] {
  const dev = webGpuDevice();
  return g.inputs.filter((i) => i.kind === 'input').map((i): DeviceInput => {
    const t = i.value.type;
    if (t.kind === 'scalar') return t.dtype === 'bool' ? false : 1;
    if (t.kind !== 'tensor' || !t.shape.every((d): d is number => typeof d === 'number')) throw new Error(`max-autotune: input '${i.name}' has no concrete type to time it with`);
    const d = dev.alloc(t.dtype, t.shape);
    const data = t.dtype === 'float32' ? new Float32Array(numel(t.shape)).fill(0.5) : t.dtype === 'int32' ? new Int32Array(numel(t.shape)) : new Uint8Array(numel(t.shape));
    dev.write(d, data);
    return d;
  });
}

/** A call's values as runDevice takes them: tensors by their buffers; a number for a 0-d tensor input as a cached GPU scalar. */
export function onDevice(m: Model, values: readonly InputValue[]): DeviceInput[] {
  return onDeviceFor(m.graph.inputs.filter((i) => i.kind === 'input'), values);
}

function onDeviceFor(decl: readonly Graph['inputs'][number][], values: readonly InputValue[]): DeviceInput[] {
  return values.map((v, k) => {
    if (v instanceof Tensor) return deviceTensor(v);
    const host = v as { data: ArrayLike<number>; dtype: Tensor['dtype'] };
    const x = host.dtype === 'bool' ? host.data[0] !== 0 : host.data[0];
    return decl[k].value.type.kind === 'scalar' ? x : deviceTensor(scalarTensorGpu(Number(x), host.dtype));
  });
}
