// Running what jit.compile captured: inference graphs with the parameters' values bound in as
// params (the runtime keeps packed weights for those; re-bound when a parameter is written in
// place), and training as a forward graph plus a backward graph (compile-autodiff.ts) recorded as
// one autograd node. A model whose tensors live on WebGPU runs there: its graphs on the eager
// WebGPU device (kernels generated and compiled at capture), reading parameters and inputs in
// their buffers and handing results over as 'webgpu' tensors (Model.runDevice), nothing read back.
// Invariant: the module's buffers receive the graph's buffer updates after every run, and a
// node's gradients go to exactly the inputs that required a gradient when it ran.

/// <reference types="@webgpu/types" />
import { autograd, defaultGenerator, gpuTensorOf, isGradEnabled, synchronize, Tensor, writeGpu, zeros } from '@kiln/core';
import { LEVELS, runPipeline } from '@kiln/compiler';
import { ELEMENT_BYTES, Graph, isRandomOp, numel, walkNodes, type Value } from '@kiln/ir-spec';
import { createModel, type DeviceTensor, type InputValue, type Model, type Output } from '@kiln/runtime';
import { gpuModel, inputCopies, onDevice, syntheticOnGpu } from './gpu-run.js';
import { eagerHigherOrder, type EagerForward } from './compile-higher-order.js';
import type { Capture, InputSource } from './compile-capture.js';
import { AutodiffUnsupported, differentiate, GRAD_PREFIX, SAVED_PREFIX } from './compile-autodiff.js';
import { scalarInput } from './specialization.js';
import { toTensor } from './tensors.js';
import { maskMultiply } from './mask-multiply.js';
import { autotune, autotuneInBackground, type AutotuneChoice, type Candidate } from './compile-autotune.js';

/** How jit.compile optimizes: 'max-autotune' times pass-list candidates per graph (compile-autotune.ts). */
export type Tuning = 'default' | 'max-autotune';
/** Where a call's tensors live, so where its graphs run. */
export type Placement = 'cpu' | 'webgpu';
export { GpuUnsupported } from './gpu-run.js';

/** Passes for graphs not frozen (parameters or training mode): no elementwise fusion (its CPU kernel was slower here). */
const PASSES = ['remove-dropout', 'fold-constants', 'canonicalize', 'eliminate-common-subexpressions', 'eliminate-dead-code',
  'fuse-epilogue', 'eliminate-dead-code', 'plan-memory'];
/**
 * Training graphs: PASSES with small elementwise chains fused (at most SMALL_CHAIN elements: the
 * batch norms' running-statistics updates, a handful of nodes of [C] each, where a node costs
 * the run more than its loop), large ones left to the per-op kernels.
 */
const TRAINING_PASSES = [...PASSES.slice(0, -1), 'fuse-elementwise', 'plan-memory'];
const SMALL_CHAIN = 1024;
/** On WebGPU every elementwise chain is fused: a dispatch costs more than a fused kernel's extra work. */
const GPU_PASSES = TRAINING_PASSES;

/** A graph's model (mode 'max-autotune' on WebGPU replaces it once the background timing is done). */
export interface Run { model: Model; autotune?: AutotuneChoice }
/** An inference model with the parameters' values bound in (as the versions say). */
export interface Bound extends Run { readonly watched: readonly Tensor[]; readonly versions: readonly number[] }
export interface Training {
  readonly forward: Run;
  readonly backward: Run;
  readonly nodeInputs: readonly string[];
  readonly grads: ReadonlySet<string>;
  readonly saved: readonly string[];
  /**
   * Bytes of the saved values a step holds from its forward to its backward (undefined when a
   * saved shape is symbolic: jit.trace with dynamicAxes), and the forward nodes the backward runs
   * again instead (CompileOptions.recompute).
   */
  readonly savedBytes: number | undefined;
  readonly recomputed: number;
  readonly userIndex: readonly number[];
  /** Whether the forward graph draws random numbers (a higher-order backward re-runs it from the same generator state). */
  readonly draws: boolean;
  /** Where each value of a run goes, worked out once from the names above (runTraining runs every step). */
  readonly wiring: Wiring;
}

/**
 * The name lookups of runTraining, resolved once per Training: the forward model's input
 * sources, each forward output's place (USER, a buffer update into `state[k]`'s tensor, or
 * saved value s ≥ 0), the autograd node's input sources, and for the backward model each
 * input's place (gradient of user output j: -1 - j; else index into the node's kept inputs)
 * and each output's node input. Invariant: computed from the same names runTraining used to
 * look up on every call, so it resolves every value exactly as those lookups did.
 */
interface Wiring {
  readonly forwardSources: readonly InputSource[];
  readonly outputPlace: readonly number[];
  readonly state: readonly (InputSource | undefined)[];
  readonly nodeSources: readonly InputSource[];
  readonly needsGrad: readonly boolean[];
  readonly backwardPlace: readonly number[];
  readonly gradFor: readonly number[];
  /** On WebGPU: which forward and backward inputs are the module's tensors, read in place by a replay (Model.runDevice's inPlace). */
  readonly forwardInPlace: readonly boolean[];
  readonly backwardInPlace: readonly boolean[];
}
const USER = -1, STATE = -2;

function wire(c: Capture, fm: Model, bm: Model, nodeInputs: readonly string[], grads: ReadonlySet<string>, saved: readonly string[], userIndex: readonly number[]): Wiring {
  const source = (name: string) => c.sources.get(name)!;
  const stateParam = new Map(c.state.map((s) => [s.output, s.param]));
  const outputPlace = fm.outputs.map((io) => {
    if (stateParam.has(io.name)) return STATE;
    if (!io.name.startsWith(SAVED_PREFIX)) return USER;
    const s = saved.indexOf(io.name);
    if (s < 0) throw new Error(`jit.compile: the forward graph outputs '${io.name}', which the backward graph does not read (a compiler bug)`);
    return s;
  });
  const forwardSources = fm.inputs.map((io) => source(io.name)), nodeSources = nodeInputs.map(source);
  const backwardPlace = bm.inputs.map((io) => {
    if (io.name.startsWith(GRAD_PREFIX)) return -1 - userIndex.indexOf(Number(io.name.slice(GRAD_PREFIX.length)));
    const s = saved.indexOf(io.name);
    return s >= 0 ? nodeInputs.length + s : nodeInputs.indexOf(io.name);
  });
  return {
    forwardSources,
    outputPlace,
    state: fm.outputs.map((io) => { const param = stateParam.get(io.name); return param === undefined ? undefined : c.sources.get(param); }),
    nodeSources,
    needsGrad: nodeInputs.map((n) => grads.has(n)),
    backwardPlace,
    gradFor: bm.outputs.map((io) => nodeInputs.indexOf(io.name.slice(GRAD_PREFIX.length))),
    forwardInPlace: forwardSources.map((s) => s.kind === 'tensor'),
    backwardInPlace: backwardPlace.map((p) => p >= 0 && p < nodeInputs.length && nodeSources[p].kind === 'tensor'),
  };
}
/** Bytes of tensors of these types, or undefined when a shape has a symbolic dim. */
function bytesOf(types: readonly Value['type'][]): number | undefined {
  let bytes = 0;
  for (const t of types) {
    if (t.kind !== 'tensor') continue;
    if (!t.shape.every((d): d is number => typeof d === 'number')) return undefined;
    bytes += numel(t.shape) * ELEMENT_BYTES[t.dtype];
  }
  return bytes;
}

export function prepareTraining(c: Capture, wrt: ReadonlySet<string>, tuning: Tuning = 'default', args?: readonly unknown[], recompute = false, on: Placement = 'cpu'): Training {
  const stateNames = new Set(c.state.map((s) => s.output));
  const userIndex = c.graph.outputs.flatMap((o, k) => (stateNames.has(o.name) ? [] : [k]));
  for (const k of userIndex) {
    if (c.graph.outputs[k].value.type.kind !== 'tensor') throw new AutodiffUnsupported(`output '${c.graph.outputs[k].name}' is not a tensor (a tuple or a number)`);
  }
  const d = differentiate(c.graph, wrt, userIndex, { recompute });
  const j = { ...d, backward: maskMultiply(d.backward) };
  const nodeInputs = [...new Set([...j.gradInputs, ...j.savedInputs])];
  const grads = new Set(j.gradInputs), saved = j.savedValues;
  const savedBytes = bytesOf(j.forward.outputs.slice(c.graph.outputs.length).map((o) => o.value.type));
  const withWiring = (forward: Run, backward: Run): Training => ({
    forward, backward, nodeInputs, grads, saved, savedBytes, recomputed: j.recomputed, userIndex, draws: [...walkNodes(j.forward.body)].some((n) => isRandomOp(n.op)), wiring: wire(c, forward.model, backward.model, nodeInputs, grads, saved, userIndex),
  });
  if (on === 'webgpu') {
    if (tuning === 'max-autotune' && args) {
      const make = (g: Graph) => gpuModel(g, c.hostFunctions);
      const f = autotuneInBackground('forward', j.forward, CANDIDATES, () => inputCopies(j.forward, (i) => sourceValue(c.sources.get(i)!, args)), make, synchronize);
      const b = autotuneInBackground('backward', j.backward, CANDIDATES, () => syntheticOnGpu(j.backward), make, synchronize);
      return withWiring(f.run, b.run);
    }
    const opts = { passes: GPU_PASSES };
    return withWiring(run(runPipeline(j.forward, opts).graph, c, on), run(runPipeline(j.backward, opts).graph, c, on));
  }
  if (tuning === 'max-autotune' && args) {
    const make = (g: Graph) => run(g, c).model;
    const f = autotune('forward', j.forward, CANDIDATES, (m) => m.inputs.map((io) => sourceValue(c.sources.get(io.name)!, args)), make);
    const b = autotune('backward', j.backward, CANDIDATES, null, make);
    return withWiring({ model: f.model, autotune: f.choice }, { model: b.model, autotune: b.choice });
  }
  const fwd = runPipeline(j.forward, { passes: TRAINING_PASSES, fuseMaxElements: SMALL_CHAIN }).graph;
  const bwd = runPipeline(j.backward, { passes: TRAINING_PASSES, fuseMaxElements: SMALL_CHAIN }).graph;
  return withWiring(run(fwd, c), run(bwd, c));
}

/** What max-autotune times for graphs that are not frozen: elementwise chains fused into one kernel or run op by op. */
const CANDIDATES: readonly Candidate[] = [
  { name: 'unfused elementwise', passes: PASSES },
  { name: 'fused elementwise', passes: [...PASSES.slice(0, -1), 'fuse-elementwise', 'plan-memory'] },
];
/** Frozen eval graphs: -O2, with and without elementwise fusion and conv epilogue fusion. */
const FROZEN_CANDIDATES: readonly Candidate[] = [
  { name: '-O2', level: 2 },
  { name: '-O2 without fuse-elementwise', passes: LEVELS[2].filter((p) => p !== 'fuse-elementwise') },
  { name: '-O2 without fuse-epilogue and fuse-elementwise', passes: LEVELS[2].filter((p) => p !== 'fuse-elementwise' && p !== 'fuse-epilogue') },
];

/**
 * The inference model: the parameters' current values bound into the graph as params (the
 * runtime keeps packed weights for those), frozen and fully optimized (-O2: BN folding,
 * fusion) when every module is in eval mode. Buffers the graph updates stay inputs.
 */
export function bindInference(c: Capture, evalMode: boolean, tuning: Tuning = 'default', args?: readonly unknown[], on: Placement = 'cpu'): Bound {
  // On WebGPU the parameters stay inputs, read in their buffers (their values are on the GPU, so no fold can see them).
  if (on === 'webgpu') {
    if (tuning === 'max-autotune' && args) {
      const { run: tuned } = autotuneInBackground('inference', c.graph, CANDIDATES, () => inputCopies(c.graph, (i) => sourceValue(c.sources.get(i)!, args)), (g) => gpuModel(g, c.hostFunctions), synchronize);
      return Object.assign(tuned, { watched: [], versions: [] }); // the same object: the tuner's later choice is seen
    }
    return { model: run(runPipeline(c.graph, { passes: GPU_PASSES }).graph, c, on).model, watched: [], versions: [] };
  }
  const updated = new Set(c.state.map((s) => s.param));
  const tensors = new Map(c.graph.tensors);
  const watched: Tensor[] = [];
  const inputs = c.graph.inputs.map((i) => {
    const s = c.sources.get(i.name)!;
    if (s.kind !== 'tensor' || updated.has(i.name)) return i;
    tensors.set(i.name, { dtype: s.tensor.dtype, shape: [...s.tensor.shape], data: s.tensor.contiguous().data.slice(0, s.tensor.numel()) });
    watched.push(s.tensor);
    return { ...i, kind: 'param' as const };
  });
  const g = new Graph(c.graph.name, inputs, c.graph.body, c.graph.outputs, tensors, c.graph.metadata);
  const frozen = evalMode && !c.state.length;
  const versions = watched.map((t) => t._version);
  if (tuning === 'max-autotune' && args) {
    const ins = (m: Model) => m.inputs.map((io) => sourceValue(c.sources.get(io.name)!, args));
    const { model, choice } = autotune('inference', g, frozen ? FROZEN_CANDIDATES : CANDIDATES, ins, (x) => run(x, c).model);
    return { model, autotune: choice, watched, versions };
  }
  const r = runPipeline(g, frozen ? { level: 2 } : { passes: PASSES });
  return { model: run(r.graph, c).model, watched, versions };
}

/** Whether a parameter bound into `b` was written in place since. */
export function stale(b: Bound): boolean {
for (let k = 0; k < b.watched.length; k++) if (b.watched[k]._version !== b.versions[k]) return true;
return false;
}

/** `reuse` (mode 'reduce-overhead'): on WebGPU, replay the graph's recorded dispatches (Model.runDevice). */
export function runInference(c: Capture, r: Bound, args: readonly unknown[], reuse = false): unknown {
  const m = r.model, sources = m.inputs.map((io) => c.sources.get(io.name)!);
  if (m.backend === 'webgpu') {
    const outs = m.runDevice(onDevice(m, sources.map((s) => sourceValue(s, args))), { reuse, inPlace: sources.map((s) => s.kind === 'tensor') });
    const state = new Map(c.state.map((s) => [s.output, c.sources.get(s.param)]));
    const user: Tensor[] = [];
    m.outputs.forEach((io, k) => {
      const s = state.get(io.name);
      if (s?.kind === 'tensor') writeGpu(s.tensor, outs[k] as DeviceTensor<GPUBuffer>);
      else if (!state.has(io.name)) user.push(gpuTensorOf(outs[k] as DeviceTensor<GPUBuffer>));
    });
    return c.rebuild(user);
  }
  return c.rebuild(split(c, m, m.runSync(sources.map((s) => sourceValue(s, args)))));
}

/** The user outputs of an inference run as tensors; buffer updates are written back into the module's buffers. */
function split(c: Capture, model: Model, outs: Output[]): Tensor[] {
  const user: Tensor[] = [];
  const state = new Map(c.state.map((s) => [s.output, s.param]));
  model.outputs.forEach((io, k) => {
    const param = state.get(io.name);
    if (param === undefined) { user.push(toTensor(outs[k])); return; }
    const s = c.sources.get(param);
    if (s?.kind === 'tensor') s.tensor._storage.data.set(outs[k].data);
  });
  return user;
}

/** Runs the forward graph and records one autograd node whose backward runs the backward graph. */
/** `eager`: the model's own forward, run again for a higher-order backward (compile-higher-order.ts). */
export function runTraining(c: Capture, t: Training, args: readonly unknown[], name: string, reuse = false, eager?: Omit<EagerForward, 'rng'>): unknown {
  const w = t.wiring, fm = t.forward.model, gpu = fm.backend === 'webgpu';
  const rng = t.draws && eager ? defaultGenerator.getState() : undefined;
  const values = w.forwardSources.map((s) => sourceValue(s, args));
  const outs = gpu ? [] : fm.runSync(values);
  const results = gpu ? fm.runDevice(onDevice(fm, values), { reuse, inPlace: w.forwardInPlace }) as DeviceTensor<GPUBuffer>[] : [];
  const user: Tensor[] = [], saved: Tensor[] = new Array(t.saved.length);
  const tensorOf = (k: number) => (gpu ? gpuTensorOf(results[k]) : toTensor(outs[k]));
  for (let k = 0; k < w.outputPlace.length; k++) {
    const place = w.outputPlace[k];
    if (place === STATE) {
      const s = w.state[k];
      if (s?.kind !== 'tensor') continue;
      if (gpu) writeGpu(s.tensor, results[k]);
      else s.tensor._storage.data.set(outs[k].data);
    } else if (place === USER) user.push(tensorOf(k));
    else saved[place] = tensorOf(k);
  }
  const ins = w.nodeSources.map((s) => asTensor(sourceValue(s, args)));
  const all = [...ins, ...saved];
  const edges = all.map((x, i) => (i < ins.length && w.needsGrad[i] && x.requiresGrad ? (x.gradFn ? { node: x.gradFn, index: x.outputIndex } : { leaf: x }) : null));
  if (!edges.some((e) => e)) return c.rebuild(user);
  const shapes = user.map((u) => u.shape);
  const bm = t.backward.model;
  const def = {
    name: `compiled_${c.graph.name}`,
    grad: { saveInputs: all.map((_, i) => i), rule: () => { throw new Error('jit.compile: this node runs its backward graph (backwardFn)'); } },
  };
  const outsOf = user.map((u) => u.detach());
  const node = new autograd.Node(def, {}, edges as never, all.map(typeOf), outsOf.map(typeOf), all, outsOf);
  node.backwardFn = (gradOutputs, kept) => {
    if (isGradEnabled()) {
      if (!eager) throw new Error(`jit.compile(${name}): higher-order gradients (createGraph) through a compiled graph need the model's own forward; call it for them`);
      return [...eagerHigherOrder(name, { ...eager, ...(rng ? { rng } : {}) }, result, outsOf, gradOutputs, ins, w.needsGrad), ...saved.map(() => null)];
    }
    const inputs = w.backwardPlace.map((p): Tensor => (p < 0 ? gradOutputs[-1 - p] ?? zeros(shapes[-1 - p], { device: gpu ? 'webgpu' : 'cpu' }) : kept[p]!));
    const res: (Tensor | null)[] = all.map(() => null);
    if (gpu) {
      // Every gradient comes back in a buffer of its own (runDevice), so it goes to .grad as it is.
      bm.runDevice(onDevice(bm, inputs), { reuse, inPlace: w.backwardInPlace }).forEach((g, k) => {
        const grad = gpuTensorOf(g as DeviceTensor<GPUBuffer>);
        grad._ownedGrad = true;
        res[w.gradFor[k]] = grad;
      });
      return res;
    }
    const got = bm.runSync(inputs);
    const shared = sharedOutputs(inputs, got);
    for (let k = 0; k < got.length; k++) {
      const g = toTensor(got[k]);
      // A gradient in a buffer of its own (no input's, no other output's) goes to .grad without a copy.
      g._ownedGrad = !shared.has(got[k].data);
      res[w.gradFor[k]] = g;
    }
    return res;
  };
  // Once the backward graph has read them (the engine releases the node), the saved values'
  // arrays go back to the forward model for the next step's results: they were fresh arrays of
  // this run that no tensor outside this node holds (none shares its buffer with an input or
  // another output), and no gradient the backward made shares them (it copied any input it output).
  if (!gpu) node.onRelease = () => fm.recycle(ownSaved(outs, w.outputPlace, ins));
  outsOf.forEach((o, i) => { if (o.dtype === 'float32') o._setGradFn(node, i); });
  const result = c.rebuild(outsOf);
  return result;
}

/** The graph's calls back into JavaScript (@jit.ignore methods): graph breaks inside a graph. */
export function hostCalls(g: Graph): { reason: string; where?: string }[] {
  return [...walkNodes(g.body)].filter((n) => n.op === 'host_call').map((n) => ({
    reason: `the @jit.ignore method ${String(n.attrs.name)} runs eagerly between the compiled parts (a host call)`,
    ...(n.meta.loc ? { where: n.meta.loc } : {}),
  }));
}

function run(graph: Capture['graph'], c: Capture, on: Placement = 'cpu'): Run {
  if (on === 'webgpu') return { model: gpuModel(graph, c.hostFunctions) };
  // shareArrays: the parameters, inputs and saved values go in and the results come out without copies.
  return { model: createModel(graph, { hostFunctions: c.hostFunctions, generator: defaultGenerator, shareArrays: true }) };
}

/** The forward's saved outputs whose array shares its elements with no input and no other output of the run. */
function ownSaved(outs: readonly Output[], place: readonly number[], inputs: readonly Tensor[]): Output[] {
  const seen = new Storage(), twice = new Set<ArrayBufferView>();
  for (const a of [...outs.map((o) => o.data), ...inputs.map((t) => t._storage.data)]) for (const b of seen.add(a)) { twice.add(a); twice.add(b); }
  return outs.filter((o, k) => place[k] >= 0 && !twice.has(o.data));
}

/** The outputs' arrays that share elements with an input or an earlier output (views share them under shareArrays). */
function sharedOutputs(inputs: readonly InputValue[], outs: readonly Output[]): Set<ArrayBufferView> {
  const seen = new Storage(), shared = new Set<ArrayBufferView>();
  for (const v of inputs) {
    const data: unknown = v instanceof Tensor ? v._storage.data : typeof v === 'object' && v && 'data' in v ? v.data : undefined;
    if (ArrayBuffer.isView(data)) seen.add(data);
  }
  for (const o of outs) if (seen.add(o.data).length) shared.add(o.data);
  return shared;
}

/**
 * Arrays seen so far, to tell which share elements: ordinary arrays share when they view the same
 * buffer; arrays over shared memory (the kernel memory's resident arrays, whose buffer objects
 * differ as the memory grows) when their bytes overlap.
 */
class Storage {
  private readonly buffers = new Map<ArrayBufferLike, ArrayBufferView[]>();
  private readonly shared: ArrayBufferView[] = [];

  /** Adds `a`; returns the arrays added before that share elements with it. */
  add(a: ArrayBufferView): ArrayBufferView[] {
    if (typeof SharedArrayBuffer === 'function' && a.buffer instanceof SharedArrayBuffer) {
      const hits = this.shared.filter((b) => a.byteOffset < b.byteOffset + b.byteLength && b.byteOffset < a.byteOffset + a.byteLength);
      this.shared.push(a);
      return hits;
    }
    const same = this.buffers.get(a.buffer);
    if (!same) { this.buffers.set(a.buffer, [a]); return []; }
    const hits = [...same];
    same.push(a);
    return hits;
  }
}

function sourceValue(s: InputSource, args: readonly unknown[]): InputValue {
  return s.kind === 'tensor' ? s.tensor : scalarInput(args[s.index]);
}

function asTensor(v: InputValue): Tensor {
  if (v instanceof Tensor) return v;
  if (typeof v === 'object' && v && 'data' in v) return toTensor({ name: '', data: v.data, shape: [...v.shape], dtype: v.dtype } as Output);
  throw new Error('jit.compile: a graph input is not a tensor');
}

/** The node's types share the tensors' shape arrays (never written), as eager dispatch's do. */
function typeOf(t: Tensor): { dtype: Tensor['dtype']; shape: readonly number[] } {
  return { dtype: t.dtype, shape: t.shape };
}
