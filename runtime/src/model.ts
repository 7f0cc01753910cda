// A runnable model: a graph planned once, its tensor table on a device, and run() that
// validates inputs, executes and checks outputs. Invariants: params and constants are
// uploaded once and never change (kernels do not mutate inputs, and outputs are fresh copies,
// so callers cannot reach the model's state, nor a later run overwrite what an earlier returned —
// planned intermediates live in the model's arena, reused run after run) — except the params a graph declares buffer
// updates for (training-mode BatchNorm statistics, ir-spec buffer-updates.ts): the model keeps
// that state, writing each run's new values over them, and run() returns only the other
// outputs; each run has its own bindings and memory accounting, so `stats` describes the last
// completed run exactly.

import { bufferUpdates, convertArray, Generator, typeToString, verifyGraph, VerifyError, walkNodes, type DType, type RandomSource, type Graph, type IRType, type Node, type TensorData, type TypedArray, type Value } from '@kiln/ir-spec';
import { createCpuDevice } from './cpu-device.js';
import type { Arena, BackendName, Device, DeviceTensor } from './device.js';
import { RuntimeError } from './errors.js';
import { runBlock, type Exec, type ExecContext, type HostFunction, type RunLimits } from './executor.js';
import { LiveBuffers, Scope } from './memory.js';
import { GpuNodeLog, nodeProfiler } from './node-profiler.js';
import { planGraph, type GraphPlan } from './plan.js';
import { RunRecorder, type RunRecord } from './replay.js';
import { RecycledArrays } from './recycled.js';
import { toScalar } from './scalar.js';
import { signature, validateDeviceInputs, validateInputs, type HostTensor, type InputValue } from './validate.js';
import { DeviceRunRecord, freshCopy, readsBack, type DeviceInput, type RecordedInput } from './device-run.js';
import { checkValue, isDeviceTensor, type RtValue } from './values.js';

/** What a run() learns while its generator runs: the GPU node log of a profiled run, and when the run's work ended. */
interface ProfiledRun {
  gpuNodes?: GpuNodeLog;
  endMs?: number;
}

/** A graph input or output as the model shows it: its name and type in text form. */
export interface IOInfo {
  readonly name: string;
  /** The IR type, e.g. `f32[N,3,32,32]` or `i32`. */
  readonly type: string;
}

/** One result of run(): a dense row-major tensor (a scalar output has shape `[]`). */
export interface Output {
  readonly name: string;
  readonly data: TypedArray;
  readonly shape: number[];
  readonly dtype: DType;
}

/** Figures of the last completed run. */
export interface RunStats {
  /** The most bytes of intermediate tensors alive at once (inputs, params and constants excluded; a view shares its buffer). */
  readonly peakIntermediateBytes: number;
  /**
   * Measured: the most bytes the run's intermediates really held at once — the arena (CPU) plus
   * every other intermediate buffer alive, sized as the device allocated it (WebGPU: live buffers).
   */
  readonly measuredPeakBytes: number;
  /** Bytes of all intermediate tensors the run created. */
  readonly totalIntermediateBytes: number;
  /** Nodes executed (a loop body's nodes count once per trip). */
  readonly nodesRun: number;
  /** Wall time of the run in milliseconds. */
  readonly ms: number;
}

export interface ModelOptions {
  /** Where to run; the CPU device by default. */
  readonly device?: Device;
  /** Loop trips one run may take over all its loops before it fails with LOOP_LIMIT (default 1 000 000). */
  readonly maxLoopTrips?: number;
  /** Largest tensor a node may create, in bytes (default 1 GiB). */
  readonly maxTensorBytes?: number;
  /**
   * Most bytes of intermediate tensors a run may hold alive at once (default 2 GiB): a node whose
   * results would go past it fails with MEMORY_LIMIT before anything is allocated.
   */
  readonly maxLiveBytes?: number;
  /**
   * Longest a run may take, in milliseconds, checked before each node and loop trip and, on the
   * CPU, inside long kernels between chunks (TIME_LIMIT).
   * Default: no limit for createModel(); 60 000 for load(), whose bytes may come from anyone.
   */
  readonly maxRunMs?: number;
  /** Run ir-spec's verifier on the graph first (default true; load() has verified already). */
  readonly verify?: boolean;
  /**
   * The JavaScript functions the graph's `host_call` nodes call, by the node's `name` (what
   * jit.script makes of a call to a @jit.ignore method, e.g. `'Net.debugHook'`). A graph with
   * host calls runs only in the process that has them; a missing one fails the run naming it.
   */
  readonly hostFunctions?: Readonly<Record<string, HostFunction>>;
  /**
   * Seed of the model's own generator, which the graph's random ops (`uniform`, `normal`:
   * rand/randn and training-mode dropout) draw from, run after run; the same seed gives the
   * same draws (`model.manualSeed(s)` reseeds). Without a seed or a generator, the generator
   * starts where an unseeded kiln generator starts.
   */
  readonly seed?: number;
  /** A generator to draw from instead (kiln's jit passes its default generator, so compiled
   * modules reproduce eager's numbers after manualSeed). */
  readonly generator?: RandomSource;
  /**
   * runSync on a device that uses host arrays in place (the CPU) reads the input arrays as they
   * are and returns each result computed into a fresh buffer as it is: no copy in or out. The
   * caller must not change an input's array during the run (a synchronous run leaves no chance),
   * and owns the outputs' arrays afterwards. Results then take no arena slot. Default false
   * (kiln's jit.compile sets it).
   */
  readonly shareArrays?: boolean;
}

export const DEFAULT_LIMITS: RunLimits = { maxLoopTrips: 1_000_000, maxTensorBytes: 2 ** 30, maxLiveBytes: 2 ** 31, maxRunMs: Infinity };
/** The symbol bindings of a replayed run: none are read (attributes were made concrete when it was recorded). */
const NO_SYMBOLS: ReadonlyMap<string, number> = new Map();
const ARRAY_OF: Record<DType, new (n: number) => TypedArray> = { float32: Float32Array, float16: Float32Array, bfloat16: Float32Array, int32: Int32Array, bool: Uint8Array, int8: Int8Array };

/** Releases a collected model's recorded device run (runDevice with `reuse`): its buffers go back to the pool. */
const heldRecords = new FinalizationRegistry<{ record?: DeviceRunRecord }>((held) => held.record?.release());

/** Graph outputs with tuples flattened depth-first into `name.0`, `name.1`, ... */
function flattenTypes(name: string, t: IRType): IOInfo[] {
  if (t.kind === 'tuple') return t.elements.flatMap((e, i) => flattenTypes(`${name}.${i}`, e));
  return [{ name, type: typeToString(t) }];
}

function checkSize(t: TensorData, what: string): void {
  const n = t.shape.reduce((a, d) => a * d, 1);
  if (t.data.length !== n) throw new RuntimeError('GRAPH', `${what} has ${t.data.length} elements but its shape [${t.shape.join(',')}] needs ${n}`);
}

function upload(device: Device, t: TensorData, what: string): DeviceTensor {
  checkSize(t, what);
  const d = device.alloc(t.dtype, t.shape);
  device.write(d, t.data);
  return d;
}

/** A table tensor the device uses in place (device.adopt), its dtype checked like a write. */
function adopt(device: Device, t: TensorData, what: string): DeviceTensor {
  checkSize(t, what);
  const data = t.data instanceof ARRAY_OF[t.dtype] ? t.data : convertArray(t.data, t.dtype);
  return device.adopt!(t.dtype, t.shape, data);
}

/** A loaded graph, ready to run. Create one with `load` (a file) or `createModel` (a Graph). */
export class Model {
  /** The graph inputs run() takes, in order (params excluded). */
  readonly inputs: readonly IOInfo[];
  /** What run() returns, in order (tuple outputs flattened to `name.0`, `name.1`, ...). */
  readonly outputs: readonly IOInfo[];
  /** Figures of the last completed run; null before the first. */
  stats: RunStats | null = null;

  private readonly plan: GraphPlan;
  private readonly bound: { value: Value; tensor: DeviceTensor }[] = [];
  private readonly constants = new Map<Node, DeviceTensor>();
  private readonly external = new Set<unknown>();
  private readonly limits: RunLimits;
  private readonly hostFunctions: Readonly<Record<string, HostFunction>>;
  /** What the graph's random ops draw from (see ModelOptions.seed). */
  readonly generator: RandomSource;
  /** Buffer updates: the output carrying each updated param's new value, and that param's device tensor. */
  private readonly updates: { output: string; param: string; tensor: DeviceTensor }[] = [];
  private readonly bufferValues = new Map<string, Output>();
  /** Where planned intermediates live run after run (the device's, when it has one and the graph a memory plan). */
  private readonly arena: Arena | undefined;
  private arenaBusy = false;
  /** ModelOptions.shareArrays, on a device that can use host arrays in place. */
  private readonly shareArrays: boolean;
  /** Whether runs can be recorded and replayed (replay.ts): a straight-line graph of tensor inputs on the CPU, updating no buffers, no result sized by data. */
  private readonly replayable: boolean;
  /** The last run's record, while nothing else has run since (replay.ts). */
  private record: RunRecord | undefined;
  /** Params and constants by value: a record's outputs may be these. */
  private readonly fixedValues = new Map<Value, DeviceTensor>();
  /** Output arrays handed back (recycle()) for runSync's results to be computed into. */
  private readonly recycled: RecycledArrays;
  /**
   * runDevice with `reuse`: the recorded run (in a holder released when the model is collected,
   * so its buffers go back to the device's pool), and why recording was refused (then it is not
   * tried again).
   */
  private readonly held: { record?: DeviceRunRecord } = {};
  private registered = false;
  /** The first node that reads a value back mid-run (readsBack), null when none; worked out at the first runDevice. */
  private readsBackNode: Node | null | undefined;
  private recordRefused: string | undefined;
  /** runDevice calls that replayed the recorded run. */
  deviceReplays = 0;

  /** @internal use createModel() or load(). */
  constructor(readonly graph: Graph, readonly device: Device, opts: Omit<ModelOptions, 'device'> = {}) {
    this.limits = {
      maxLoopTrips: opts.maxLoopTrips ?? DEFAULT_LIMITS.maxLoopTrips,
      maxTensorBytes: opts.maxTensorBytes ?? DEFAULT_LIMITS.maxTensorBytes,
      maxLiveBytes: opts.maxLiveBytes ?? DEFAULT_LIMITS.maxLiveBytes,
      maxRunMs: opts.maxRunMs ?? DEFAULT_LIMITS.maxRunMs,
    };
    for (const [k, v] of Object.entries(this.limits)) {
      if (typeof v !== 'number' || !(v >= 0)) throw new RuntimeError('GRAPH', `option ${k} must be a non-negative number (or Infinity), got ${String(v)}`);
    }
    this.hostFunctions = opts.hostFunctions ?? {};
    this.shareArrays = !!opts.shareArrays && !!device.adopt;
    this.recycled = new RecycledArrays(graph.outputs.length, device.residentArray?.bind(device));
    this.generator = opts.generator ?? (opts.seed === undefined ? new Generator() : new Generator(opts.seed));
    const runInputs = graph.inputs.filter((i) => i.kind === 'input');
    for (const i of runInputs) {
      const k = i.value.type.kind;
      if (k !== 'tensor' && k !== 'scalar') throw new RuntimeError('GRAPH', `input '${i.name}' has type ${typeToString(i.value.type)}; the runtime takes tensor and scalar inputs only`);
    }
    this.inputs = runInputs.map((i) => ({ name: i.name, type: typeToString(i.value.type) }));
    let declared;
    try {
      declared = bufferUpdates(graph);
    } catch (e) {
      throw new RuntimeError('GRAPH', e instanceof Error ? e.message : String(e));
    }
    const stateOutputs = new Set(declared.map((u) => u.output));
    this.outputs = graph.outputs.filter((o) => !stateOutputs.has(o.name)).flatMap((o) => flattenTypes(o.name, o.value.type));
    this.plan = planGraph(graph);
    this.arena = this.plan.memory ? device.createArena?.() : undefined;

    const table = new Map<string, DeviceTensor>();
    // The params buffer updates write are the model's own copies; every other table tensor is
    // adopted where the device can (the graph's data, not a copy: weights exist once).
    const written = new Set(declared.map((u) => u.param));
    const tableTensor = (name: string, what: string) => {
      let t = table.get(name);
      if (!t) {
        const data = graph.tensors.get(name);
        if (!data) throw new RuntimeError('GRAPH', `${what} names tensor '${name}', which is not in the graph's tensor table`);
        t = device.adopt && !written.has(name) ? adopt(device, data, `tensor '${name}'`) : upload(device, data, `tensor '${name}'`);
        device.pin?.(t);
        table.set(name, t);
        this.external.add(t.buffer);
      }
      return t;
    };
    for (const i of graph.inputs) {
      if (i.kind !== 'param') continue;
      const t = tableTensor(i.name, `param '${i.name}'`);
      const why = checkValue(t, i.value.type, new Map());
      if (why) throw new RuntimeError('GRAPH', `param '${i.name}': ${why} in the tensor table`);
      this.bound.push({ value: i.value, tensor: t });
    }
    for (const u of declared) {
      const tensor = this.bound.find((b) => b.value === graph.inputs.find((i) => i.kind === 'param' && i.name === u.param)?.value)?.tensor;
      if (!tensor) throw new RuntimeError('GRAPH', `buffer update '${u.output}': param '${u.param}' has no tensor`);
      this.updates.push({ ...u, tensor });
      const data = graph.tensors.get(u.param)!;
      this.bufferValues.set(u.param, { name: u.param, data: data.data.slice() as TypedArray, shape: [...data.shape], dtype: data.dtype });
    }
    for (const node of walkNodes(graph.body)) {
      if (node.op !== 'constant') continue;
      const { name, value, dtype } = node.attrs;
      let t: DeviceTensor;
      if (typeof name === 'string') t = tableTensor(name, 'a constant node');
      else {
        const out = node.outputs[0]?.type;
        if (!out || out.kind !== 'tensor' || (typeof value !== 'number' && typeof value !== 'boolean')) {
          throw new RuntimeError('GRAPH', `a constant node needs attribute name (tensor table) or value (literal), got ${JSON.stringify(node.attrs)}`);
        }
        const data = new ARRAY_OF[out.dtype](1);
        data[0] = Number(toScalar(value, out.dtype));
        t = upload(device, { dtype: out.dtype, shape: [], data }, `constant ${String(value)} (${String(dtype)})`);
        this.external.add(t.buffer);
      }
      this.constants.set(node, t);
      this.fixedValues.set(node.outputs[0], t);
    }
    for (const b of this.bound) this.fixedValues.set(b.value, b.tensor);
    this.replayable = device.backend === 'cpu' && this.updates.length === 0 && runInputs.every((i) => i.value.type.kind === 'tensor') &&
      // A result sized by data (masked_select) may change size between runs of the same shapes.
      this.plan.body.nodes.every((np) => (np.def !== undefined && !np.def.dataDims) || np.node.op === 'constant');
  }

  /** The backend this model runs on. */
  get backend(): BackendName { return this.device.backend; }

  /**
   * The current values of the buffers this graph updates (training-mode BatchNorm's
   * running_mean, running_var, num_batches_tracked), by param name; empty for a graph that
   * updates none. Each run writes the new values here and into the params the next run reads.
   *
   * @example
   * ```ts
   * await model.run([x]);
   * model.buffers.get('bn.running_mean')?.data;
   * ```
   */
  get buffers(): ReadonlyMap<string, Output> { return this.bufferValues; }

  /**
   * Sets an updated buffer's value (e.g. after the module's running statistics were reset), for
   * the next run to read. Only buffers the graph updates can be set: the others are constant.
   */
  setBuffer(name: string, data: TypedArray): void {
    const u = this.updates.find((x) => x.param === name);
    if (!u) throw new RuntimeError('INPUT', `setBuffer(): '${name}' is not a buffer this graph updates (${this.updates.map((x) => `'${x.param}'`).join(', ') || 'it updates none'})`);
    const have = this.bufferValues.get(name)!;
    if (data.length !== have.data.length) throw new RuntimeError('INPUT', `setBuffer(): '${name}' has ${have.data.length} elements (shape [${have.shape.join(',')}]), got ${data.length}`);
    const copy = convertArray(Array.from(data), have.dtype);
    this.device.write(u.tensor, copy);
    this.bufferValues.set(name, { ...have, data: copy });
  }

  /**
   * Reseeds the generator the graph's random ops draw from (a generator given in the options
   * must have a `manualSeed` method).
   *
   * @example
   * ```ts
   * model.manualSeed(0); const a = await model.run(x);
   * model.manualSeed(0); const b = await model.run(x); // same draws as a
   * ```
   */
  manualSeed(seed: number): void {
    const g = this.generator as RandomSource & { manualSeed?: (s: number) => unknown };
    if (typeof g.manualSeed !== 'function') throw new RuntimeError('GRAPH', 'manualSeed(): this model draws from a generator it was given without a manualSeed method; seed that generator instead');
    g.manualSeed(seed);
  }

  /**
   * Runs the graph on `inputs`, given in the order of `model.inputs`: tensors as
   * `{ data, shape, dtype }` (a kiln Tensor works as it is), scalars as numbers or booleans.
   *
   * @example
   * ```ts
   * const [y] = await model.run([{ data: new Float32Array(2 * 3 * 8 * 8), shape: [2, 3, 8, 8], dtype: 'float32' }]);
   * y.shape; // e.g. [2, 10]
   * ```
   */
  async run(inputs: readonly InputValue[]): Promise<Output[]> {
    const replayed = this.replay(inputs, false);
    if (replayed) return replayed;
    const profiled: ProfiledRun = {};
    const gen = this.exec(inputs, false, profiled);
    try {
      let r = gen.next();
      while (!r.done) r = gen.next(await this.device.read(r.value));
      await profiled.gpuNodes?.complete(profiled.endMs ?? performance.now()); // GPU node times, once the timestamps are read
      return r.value;
    } finally {
      gen.return([]); // a failed read leaves the run unfinished: end it, so it lets go of the arena
      profiled.gpuNodes?.release();
    }
  }

  /**
   * run() on a synchronous device (the CPU): same results, no promise — for interpreters and
   * tests that need a plain call. Throws a BACKEND RuntimeError on a device whose reads are
   * asynchronous.
   *
   * @example
   * ```ts
   * const [y] = createModel(graph).runSync([{ data: new Float32Array([1, 2]), shape: [1, 2], dtype: 'float32' }]);
   * ```
   */
  runSync(inputs: readonly InputValue[]): Output[] {
    const replayed = this.replay(inputs, this.shareArrays);
    if (replayed) return replayed;
    const gen = this.exec(inputs, this.shareArrays);
    try {
      let r = gen.next();
      while (!r.done) {
        const data = this.device.read(r.value);
        if (data instanceof Promise) {
          data.catch(() => {}); // the error below is the one to report
          throw new RuntimeError('BACKEND', `runSync() needs a synchronous device; the ${this.device.backend} device reads asynchronously: use run()`);
        }
        r = gen.next(data);
      }
      return r.value;
    } finally {
      gen.return([]);
    }
  }

  /**
   * Runs the graph on tensors that already live on this model's device (`{ buffer, shape, dtype }`
   * of its buffers; numbers and booleans for scalar inputs) and returns the results as device
   * tensors in buffers of their own, which the caller owns (`device.free` each when done): nothing
   * is uploaded or read back, and the call returns once the work is recorded (WebGPU: submitted
   * with the next read). Inputs are read, never written. For a device with `copy` (WebGPU) and a
   * graph that never reads a value back mid-run and updates no buffers; else a BACKEND error.
   *
   * `reuse` (jit.compile's mode 'reduce-overhead'): the first run is recorded where the device
   * can record (WebGPU: every dispatch's pipeline, bind groups and workgroup counts), on copies of
   * the tensor inputs except those marked `inPlace` (parameters: the same buffers every call), and
   * kept with its intermediates; a later call whose inputs have the same dtypes, shapes and scalar
   * values, and the same buffers where `inPlace`, copies its inputs in and records the same
   * commands again, skipping the executor (`deviceReplays` counts these). Another call records anew.
   * While a node profiler is attached, runs go through the executor (its nodes timed as issued).
   *
   * @example
   * ```ts
   * const dev = webGpuDevice(); const model = createModel(graph, { device: dev });
   * const [y] = model.runDevice([{ buffer: xBuffer, shape: [1, 4], dtype: 'float32' }]);
   * ```
   */
  runDevice(inputs: readonly DeviceInput[], opts: { readonly reuse?: boolean; readonly inPlace?: readonly boolean[] } = {}): DeviceTensor[] {
    const backend = this.device.backend;
    if (!this.device.copy) throw new RuntimeError('BACKEND', `runDevice() runs on tensors of a device with its own memory (WebGPU); on the ${backend} device use runSync()`);
    if (this.updates.length) throw new RuntimeError('BACKEND', `runDevice(): this graph updates buffers (${this.updates.map((u) => `'${u.param}'`).join(', ')}), which it keeps on the host; use run()`);
    const reads = this.readsBackNode === undefined ? (this.readsBackNode = readsBack(this.graph) ?? null) : this.readsBackNode;
    if (reads) throw new RuntimeError('BACKEND', `runDevice(): node ${reads.op}${reads.meta.loc ? ` (${reads.meta.loc})` : ''} reads a value back from the ${backend} device in the middle of the run, which runDevice never waits for; use run()`);
    const decl = this.graph.inputs.filter((i) => i.kind === 'input');
    const { env, values } = validateDeviceInputs(decl, inputs);
    // A profiled run goes through the executor (a replay would report no nodes), as on the CPU.
    const reuse = opts.reuse && !nodeProfiler();
    if (reuse && this.held.record) {
      const out = this.held.record.replay(values);
      if (out) { this.deviceReplays++; return out; }
      this.held.record.release();
      this.held.record = undefined;
    }
    if (!reuse || this.recordRefused || !this.device.record) return this.execDevice(values, env).map((t) => (t.fresh ? t.tensor : freshCopy(this.device, t.tensor)));
    // Recorded: the inputs not read in place are copied into buffers of the record's first.
    const recorded = values.map((v, k): RecordedInput => (typeof v !== 'object' ? { kind: 'scalar', value: v }
      : opts.inPlace?.[k] ? { kind: 'in place', tensor: v } : { kind: 'copied', tensor: freshCopy(this.device, v) }));
    const owned: unknown[] = recorded.flatMap((r) => (r.kind === 'copied' ? [r.tensor.buffer] : []));
    const recorder = this.device.record();
    let results: { tensor: DeviceTensor; fresh: boolean }[];
    try {
      results = this.execDevice(recorded.map((r) => (r.kind === 'scalar' ? r.value : r.tensor)), env);
    } catch (e) {
      const work = recorder.finish();
      if (typeof work !== 'string') work.release();
      for (const b of owned) this.device.free(b);
      throw e;
    }
    const work = recorder.finish();
    if (typeof work === 'string') {
      // Not replayable: the results are handed over as a plain run's are, before the input copies they may view are freed.
      this.recordRefused = work;
      const out = results.map((r) => (r.fresh ? r.tensor : freshCopy(this.device, r.tensor)));
      for (const b of owned) this.device.free(b);
      return out;
    }
    this.held.record = new DeviceRunRecord(this.device, recorded, work, results.map((r) => r.tensor), [...owned, ...results.flatMap((r) => (r.fresh ? [r.tensor.buffer] : []))]);
    if (!this.registered) { heldRecords.register(this, this.held); this.registered = true; }
    return results.map((r) => freshCopy(this.device, r.tensor));
  }

  /** Why runDevice with `reuse` does not record this graph (the device could not replay its first run), if so. */
  get deviceRecordRefused(): string | undefined { return this.recordRefused; }

  /**
   * One run on device tensors (runDevice): each result with whether its buffer is a fresh result
   * of this run, seen once (else it is an input's, a param's, a constant's or another result's).
   */
  private execDevice(values: readonly (DeviceTensor | number | boolean)[], env: Map<string, number>): { tensor: DeviceTensor; fresh: boolean }[] {
    if (this.arenaBusy) throw new RuntimeError('BACKEND', 'runDevice(): another run of this model is in progress');
    const t0 = performance.now();
    const decl = this.graph.inputs.filter((i) => i.kind === 'input');
    const external = new Set(this.external);
    const mem = new LiveBuffers(this.device, external, this.plan.memory, undefined, new Set(this.graph.outputs.map((o) => o.value)));
    const scope = new Scope(mem);
    for (const { value, tensor } of this.bound) scope.bind(value, tensor);
    decl.forEach((d, k) => {
      const v = values[k];
      if (typeof v === 'object') external.add(v.buffer);
      scope.bind(d.value, v);
    });
    const ctx: ExecContext = { device: this.device, env, limits: this.limits, constants: this.constants, hostFunctions: this.hostFunctions, generator: this.generator, nodesRun: 0, loopTrips: 0, started: t0, noWait: true };
    this.arenaBusy = true;
    try {
      const r = runBlock(ctx, this.plan.body, scope).next();
      if (!r.done) throw new RuntimeError('BACKEND', 'runDevice(): the run asked to read a value back from the device (a compiler bug: readsBack() missed it)');
      const seen = new Set<unknown>(), results: { tensor: DeviceTensor; fresh: boolean }[] = [];
      const leaf = (name: string, rt: RtValue, t: IRType): void => {
        if (isDeviceTensor(rt)) {
          const fresh = !external.has(rt.buffer) && !seen.has(rt.buffer);
          seen.add(rt.buffer);
          results.push({ tensor: rt, fresh });
        } else if (typeof rt === 'number' || typeof rt === 'boolean') {
          throw new RuntimeError('OUTPUT', `runDevice(): output '${name}' is a number, which would have to be uploaded; return it as a tensor or use run()`);
        } else rt.forEach((x, i) => leaf(`${name}.${i}`, x, t.kind === 'tuple' ? t.elements[i] : t.kind === 'list' ? t.element : t));
      };
      for (const o of this.graph.outputs) {
        const rt = scope.get(o.value);
        if (rt === undefined) throw new RuntimeError('OUTPUT', `output '${o.name}' has no value (verify the graph)`);
        const why = checkValue(rt, o.value.type, env);
        if (why) throw new RuntimeError('OUTPUT', `output '${o.name}': ${why}`);
        leaf(o.name, rt, o.value.type);
      }
      for (const r of results) if (r.fresh) external.add(r.tensor.buffer); // handed over: releaseAll must not free them
      scope.releaseAll();
      const end = performance.now();
      this.stats = { peakIntermediateBytes: mem.peak, measuredPeakBytes: mem.measuredPeak, totalIntermediateBytes: mem.total, nodesRun: ctx.nodesRun, ms: end - t0 };
      nodeProfiler()?.onRun({ graph: this.graph.name, backend: this.device.backend, startMs: t0, endMs: end, peakBytes: mem.measuredPeak });
      return results;
    } finally {
      this.arenaBusy = false;
    }
  }

  /**
   * With ModelOptions.shareArrays: hands back output arrays of earlier runSync calls that the
   * caller no longer reads and holds nowhere (not in a tensor anyone can reach), so a later
   * runSync may compute a result of the same dtype and size into one instead of a fresh array
   * (and hand it over again). At most one array per graph output is kept; arrays that view part
   * of a larger buffer are not taken. Without shareArrays it does nothing.
   */
  recycle(outputs: readonly Output[]): void {
    if (!this.shareArrays) return;
    for (const o of outputs) this.recycled.give(o.dtype, o.shape, o.data);
  }

  /**
   * run() with inputs keyed by name.
   *
   * @example
   * ```ts
   * const [y] = await model.runNamed({ x: tensor });
   * ```
   */
  async runNamed(inputs: Readonly<Record<string, InputValue>>): Promise<Output[]> {
    return this.run(this.ordered(inputs));
  }

  private ordered(record: Readonly<Record<string, InputValue>>): InputValue[] {
    if (typeof record !== 'object' || record === null) throw new RuntimeError('INPUT', `runNamed() takes a record keyed by input name (${this.signature()})`);
    const names = new Set(this.inputs.map((i) => i.name));
    const unknown = Object.keys(record).filter((k) => !names.has(k));
    if (unknown.length) throw new RuntimeError('INPUT', `unknown input${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => `'${k}'`).join(', ')}; the graph takes (${this.signature()})`);
    const missing = this.inputs.filter((i) => !Object.hasOwn(record, i.name));
    if (missing.length) throw new RuntimeError('INPUT', `missing input${missing.length > 1 ? 's' : ''} ${missing.map((i) => `'${i.name}': ${i.type}`).join(', ')}`);
    return this.inputs.map((i) => record[i.name]);
  }

  private signature(): string {
    return signature(this.graph.inputs.filter((i) => i.kind === 'input'));
  }

  /** The run replayed from the last run's record (replay.ts), or undefined when it does not apply. */
  private replay(inputs: readonly InputValue[], borrow: boolean): Output[] | undefined {
    const record = this.record;
    if (!record || this.arenaBusy || nodeProfiler()) return undefined;
    const arrays = record.match(inputs);
    if (!arrays) return undefined;
    const ctx: ExecContext = { device: this.device, env: NO_SYMBOLS, limits: this.limits, constants: this.constants, hostFunctions: this.hostFunctions, generator: this.generator, nodesRun: 0, loopTrips: 0, started: performance.now() };
    this.arenaBusy = true;
    try {
      const { outputs, stats } = record.replay(ctx, arrays, borrow, this.external, this.recycled);
      this.stats = stats;
      return outputs;
    } finally {
      this.arenaBusy = false;
      this.device.afterRun?.();
    }
  }

  /**
   * `borrow` (runSync with ModelOptions.shareArrays): the inputs' arrays are used as they are
   * (kernels never write their inputs), and each output computed into a fresh buffer is handed
   * over as it is, not copied (graph outputs then take no arena slot). A run() may be awaited
   * while its caller changes an input, so it copies inputs and outputs.
   */
  private *exec(inputs: readonly InputValue[], borrow = false, profiled?: ProfiledRun): Exec<Output[]> {
    const t0 = performance.now();
    // One run at a time holds the arena: a run that starts while another is suspended (run() awaits
    // reads) allocates its intermediates instead, so the two never share a slot.
    const arena = this.arenaBusy ? undefined : this.arena;
    if (arena) this.arenaBusy = true;
    try {
      return yield* this.execWith(inputs, t0, arena, borrow, profiled);
    } finally {
      if (arena) this.arenaBusy = false;
      this.device.afterRun?.();
    }
  }

  private *execWith(inputs: readonly InputValue[], t0: number, arena: Arena | undefined, borrow: boolean, profiled?: ProfiledRun): Exec<Output[]> {
    const decl = this.graph.inputs.filter((i) => i.kind === 'input');
    const { env, values } = validateInputs(decl, inputs);
    const external = new Set(this.external);
    const escaping = borrow ? new Set(this.graph.outputs.map((o) => o.value)) : undefined;
    const mem = new LiveBuffers(this.device, external, this.plan.memory, arena, escaping, borrow ? this.recycled : undefined);
    const scope = new Scope(mem);
    for (const { value, tensor } of this.bound) scope.bind(value, tensor);
    const inputBuffers: unknown[] = []; // this run's copies of the inputs, freed when it ends
    decl.forEach((d, k) => {
      const v = values[k];
      if (typeof v === 'number' || typeof v === 'boolean') { scope.bind(d.value, v); return; }
      if (borrow) {
        const t = this.device.adopt!(v.dtype, v.shape, v.data);
        external.add(t.buffer);
        scope.bind(d.value, t);
        return;
      }
      const t = this.device.alloc(v.dtype, v.shape);
      this.device.write(t, v.data);
      external.add(t.buffer);
      inputBuffers.push(t.buffer);
      scope.bind(d.value, t);
    });
    const prof = nodeProfiler(), timer = this.device.dispatchTimer;
    const gpuNodes = prof && timer && profiled ? (profiled.gpuNodes = new GpuNodeLog(timer, prof)) : undefined;
    // A run that holds the arena may change it: the last record no longer applies, this run's may.
    if (arena === this.arena) this.record = undefined;
    const recorder = this.replayable && arena === this.arena && !prof ? new RunRecorder(decl.map((d) => d.value), escaping) : undefined;
    // A run that grew the arena offered some results slots it has since replaced (and freed, where
    // the slots are kernel memory): its record would write there. The next run records instead.
    const arenaBytes = arena?.bytes;
    const ctx: ExecContext = { device: this.device, env, limits: this.limits, constants: this.constants, hostFunctions: this.hostFunctions, generator: this.generator, nodesRun: 0, loopTrips: 0, started: t0, ...(gpuNodes ? { gpuNodes } : {}), ...(recorder ? { recorder } : {}) };
    yield* runBlock(ctx, this.plan.body, scope);

    const outputs: Output[] = [];
    const state: Output[] = [];
    // Buffers an output may take as they are: fresh results of this run, each handed over once.
    const handed = borrow ? new Set<unknown>() : undefined;
    const take = handed && ((b: unknown) => {
      if (external.has(b) || mem.inSlot(b) || handed.has(b)) return false;
      handed.add(b);
      return true;
    });
    for (const o of this.graph.outputs) {
      const rt = scope.get(o.value);
      if (rt === undefined) throw new RuntimeError('OUTPUT', `output '${o.name}' has no value (verify the graph)`);
      const why = checkValue(rt, o.value.type, env);
      if (why) throw new RuntimeError('OUTPUT', `output '${o.name}': ${why}`);
      yield* this.collect(o.name, rt, o.value.type, this.updates.some((u) => u.output === o.name) ? state : outputs, take);
    }
    // The new buffer values become the params the next run reads (written after every read of
    // this run, so no node saw a half-updated state).
    for (const u of this.updates) {
      const v = state.find((o) => o.name === u.output)!;
      this.device.write(u.tensor, v.data);
      this.bufferValues.set(u.param, { ...v, name: u.param, data: v.data.slice() as TypedArray });
    }
    scope.releaseAll();
    for (const b of inputBuffers) this.device.free(b);
    const end = performance.now();
    this.stats = { peakIntermediateBytes: mem.peak, measuredPeakBytes: mem.measuredPeak, totalIntermediateBytes: mem.total, nodesRun: ctx.nodesRun, ms: end - t0 };
    if (recorder && arena?.bytes === arenaBytes) this.record = recorder.finish(values as HostTensor[], this.graph.outputs, this.fixedValues, this.stats);
    if (profiled) profiled.endMs = end;
    prof?.onRun({ graph: this.graph.name, backend: this.device.backend, startMs: t0, endMs: end, peakBytes: mem.measuredPeak });
    return outputs;
  }

  private *collect(name: string, rt: RtValue, t: IRType, out: Output[], take?: (buffer: unknown) => boolean): Exec<void> {
    if (isDeviceTensor(rt)) {
      const data: TypedArray = take?.(rt.buffer) ? rt.buffer as TypedArray : yield rt;
      out.push({ name, data, shape: [...rt.shape], dtype: rt.dtype });
    } else if (typeof rt === 'number' || typeof rt === 'boolean') {
      const dtype: DType = t.kind === 'scalar' ? t.dtype : typeof rt === 'boolean' ? 'bool' : 'float32';
      const data = new ARRAY_OF[dtype](1);
      data[0] = Number(rt);
      out.push({ name, data, shape: [], dtype });
    } else {
      for (let i = 0; i < rt.length; i++) {
        const et = t.kind === 'tuple' ? t.elements[i] : t.kind === 'list' ? t.element : t;
        yield* this.collect(`${name}.${i}`, rt[i], et, out, take);
      }
    }
  }
}

/**
 * A model from an in-memory graph (hand-built, traced or decoded), on the CPU unless a device
 * is given. The graph is verified first (a GRAPH RuntimeError names the bad node).
 *
 * @example
 * ```ts
 * const b = new GraphBuilder('f');
 * const x = b.input('x', tensorType('float32', ['N', 4]));
 * b.output('y', b.op1('relu', [x]));
 * const model = createModel(b.build());
 * const [y] = model.runSync([{ data: new Float32Array([-1, 2, -3, 4]), shape: [1, 4], dtype: 'float32' }]);
 * ```
 */
export function createModel(graph: Graph, opts: ModelOptions = {}): Model {
  if (opts.verify ?? true) {
    try {
      verifyGraph(graph);
    } catch (e) {
      if (!(e instanceof VerifyError)) throw e;
      throw new RuntimeError('GRAPH', `the graph does not verify: ${e.message}`, e.node, { cause: e });
    }
  }
  return new Model(graph, opts.device ?? createCpuDevice(), opts);
}
