// THE dispatch: every tensor op — method, function or layer — ends here. It validates the
// arguments against the op's ir-spec entry, runs the kernel, records the autograd node and
// notifies active tracers. An op that bypasses this function is a bug.

import { getOp, isFloating, OpError, type CpuTensor, type KernelContext, type OpDef, type TensorType } from '@kiln/ir-spec';
import { fastPrimitives } from '@kiln/runtime';
import { Tensor } from './tensor.js';
import { isGradEnabled } from './autograd/grad-mode.js';
import { Node, type Edge } from './autograd/node.js';
import { defaultGenerator } from './random.js';
import { deviceOfOp, dispatchGpu } from './device.js';
import { autocastInputs, setAutocastCast } from './amp/autocast.js';

/** Observes every dispatched op (the tracer, profilers). */
export interface DispatchObserver {
  /** Called before the op runs (profilers time it from here). */
  beforeOp?(name: string): void;
  /** `ctx` is what the kernel got (a random op's generator). */
  onOp(op: OpDef, inputs: readonly (Tensor | null)[], attrs: Record<string, unknown>, outputs: readonly Tensor[], ctx?: KernelContext): void;
}

const observers: DispatchObserver[] = [];

/** Adds an observer until the returned function is called (a profiler's start..stop). */
export function addObserver(obs: DispatchObserver): () => void {
  observers.push(obs);
  return () => { const k = observers.lastIndexOf(obs); if (k >= 0) observers.splice(k, 1); };
}

/** Adds an observer for the duration of `fn`. */
export function withObserver<R>(obs: DispatchObserver, fn: () => R): R {
  observers.push(obs);
  try {
    return fn();
  } finally {
    observers.splice(observers.lastIndexOf(obs), 1);
  }
}

function parseAttrs(def: OpDef, attrs: Record<string, unknown>): unknown {
  const r = def.attrs.safeParse(attrs);
  if (!r.success) {
    const issue = r.error.issues[0];
    const where = issue.path.length ? `attribute '${issue.path.join('.')}'` : 'attributes';
    throw new OpError(def.name, `invalid ${where}: ${issue.message} (got ${JSON.stringify(attrs)})`);
  }
  return r.data;
}

/**
 * Runs op `name` on `inputs` (null = an omitted optional input) and returns its outputs. A
 * random op (`uniform`, `normal`) draws from `ctx.generator`, by default kiln's default
 * generator (the one manualSeed seeds, and compiled graphs run in this process draw from).
 */
export function dispatch(name: string, inputs: readonly (Tensor | null)[], attrs: Record<string, unknown> = {}, ctx?: KernelContext): Tensor[] {
  for (const obs of observers) obs.beforeOp?.(name);
  const def = getOp(name);
  // Autocast (amp/autocast.ts) casts the inputs of listed ops with cast ops through this dispatch.
  inputs = autocastInputs(name, inputs, castTo);
  const a = parseAttrs(def, attrs);
  const inTypes: (TensorType | null)[] = inputs.map((t) => (t ? { dtype: t.dtype, shape: t.shape } : null));
  const outTypes = def.infer(inTypes, a);
  // The kernel runs with the CPU device's primitives (WebAssembly SIMD products where available).
  const kctx: KernelContext = { ...ctx, prims: fastPrimitives(), ...(def.random ? { generator: ctx?.generator ?? defaultGenerator } : {}) };
  let outputs: Tensor[];
  if (deviceOfOp(name, inputs) === 'webgpu') {
    // Recorded on the GPU: a view shares its input's storage, as on the CPU.
    outputs = dispatchGpu(def, inputs, a as Record<string, unknown>, outTypes, kctx).map((s, i) => {
      const shape = outTypes[i].shape as number[];
      return 'view' in s ? Tensor._view(s.view, shape) : new Tensor(s, shape, outTypes[i].dtype);
    });
  } else {
    const raw: CpuTensor[] = def.cpu(inputs.map((t) => t && t.cpu()), a, kctx);
    outputs = raw.map((o) => {
      // A kernel that returns an input's buffer made a view (reshape): share the storage so
      // version counters and in-place updates see both.
      const src = inputs.find((t) => t && t.cpu().data === o.data);
      return src ? Tensor._view(src, o.shape) : Tensor._fromCpu(o);
    });
  }
  if (outputs.length !== outTypes.length) throw new Error(`op ${name}: kernel returned ${outputs.length} outputs, rule says ${outTypes.length}`);

  if (def.grad && isGradEnabled()) {
    const needs = inputs.map((t) => !!t && t.requiresGrad);
    if (needs.some(Boolean)) {
      const edges: Edge[] = inputs.map((t) => {
        if (!t || !t.requiresGrad) return null;
        return t.gradFn ? { node: t.gradFn, index: t.outputIndex } : { leaf: t };
      });
      const node = new Node(def, a, edges, inTypes, outTypes, inputs, outputs);
      outputs.forEach((o, i) => {
        if (isFloating(o.dtype)) o._setGradFn(node, i);
      });
    }
  }
  for (const obs of observers) obs.onOp(def, inputs, a as Record<string, unknown>, outputs, kctx);
  return outputs;
}

const castTo = (t: Tensor, dtype: 'float32' | 'float16' | 'bfloat16'): Tensor => dispatch('cast', [t], { dtype })[0];
setAutocastCast(castTo);

/** Single-output convenience form. */
export function dispatch1(name: string, inputs: readonly (Tensor | null)[], attrs: Record<string, unknown> = {}, ctx?: KernelContext): Tensor {
  return dispatch(name, inputs, attrs, ctx)[0];
}
