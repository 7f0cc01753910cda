// The executor: runs a planned graph on a Device, regions included. Invariants: every value is
// bound in the scope of the block that defines it and released after its last use (plan.ts),
// so `LiveBuffers` sees exactly the intermediates alive at each step (and hands planned results
// their arena slot only when it is free); every failure is a
// RuntimeError naming the node; and the executor reads tensor contents only through
// `device.read`, which it requests by yielding the tensor — a synchronous driver answers at
// once (the CPU), an asynchronous one awaits (WebGPU), and both share this one implementation
// (on the CPU a registry op never yields, so it runs as a plain call: runOpSync, the same steps).
// A result whose size depends on data (masked_select) is sized the same way on a non-CPU
// device: the executor reads what the op entry's `dataDims` names and hands the dims to the dispatch.
// `host_call` nodes call back into JavaScript through the model's host functions with host
// copies of their inputs; `raise` nodes fail the run with their message. A run is bounded
// (RunLimits): its time is checked before every node and loop trip, and inside a long kernel
// (the run's deadline, which the kernels tick against), and a node's results against the
// tensor and live-bytes limits before the device allocates them.

import { convertArray, dataDimsOf, ELEMENT_BYTES, KernelDeadline, numel, OpError, setKernelDeadline, typeToString, type Attrs, type DType, type RandomSource, type IRType, type Node, type TypedArray, type TensorType, type Value } from '@kiln/ir-spec';
import type { Device, DeviceTensor } from './device.js';
import { concreteAttrs, type SymbolEnv } from './dims.js';
import { RuntimeError } from './errors.js';
import type { Scope } from './memory.js';
import type { BlockPlan, NodePlan } from './plan.js';
import { coveredNodes, nodeProfiler, type GpuNodeLog, type NodeProfiler } from './node-profiler.js';
import { scalarOp, toScalar, type Scalar } from './scalar.js';
import { checkValue, describeValue, isDeviceTensor, type RtValue } from './values.js';

/** A value a host function receives or returns: a dense tensor, or a number/boolean scalar. */
export type HostValue = { readonly data: TypedArray; readonly shape: readonly number[]; readonly dtype: DType } | number | boolean;

/**
 * A JavaScript function a `host_call` node calls (a method marked @jit.ignore). It gets the
 * node's inputs in order; it returns nothing for a node without results, the value for one
 * result, and an array of the values for several. A returned tensor is any object with
 * `{ data, shape, dtype }` (a kiln Tensor works).
 */
export type HostFunction = (...args: HostValue[]) => unknown;

/** A computation that may ask for tensor contents: it yields a tensor and receives its data. */
export type Exec<T> = Generator<DeviceTensor, T, TypedArray>;

export interface RunLimits {
  /** Loop trips one run may take, over all loops, before it fails (LOOP_LIMIT): a bound on
   * the run's time even for nested loops or a condition that never turns false. */
  readonly maxLoopTrips: number;
  /** Largest tensor a node may create, in bytes (TOO_LARGE). */
  readonly maxTensorBytes: number;
  /** Most bytes of intermediate tensors alive at once, checked before a node allocates (MEMORY_LIMIT). */
  readonly maxLiveBytes: number;
  /** Longest a run may take, in milliseconds, checked before each node and loop trip, and by CPU kernels between chunks (TIME_LIMIT). */
  readonly maxRunMs: number;
}

export interface ExecContext {
  readonly device: Device;
  readonly env: SymbolEnv;
  readonly limits: RunLimits;
  /** Device tensors of `constant` nodes, made once per model. */
  readonly constants: ReadonlyMap<Node, DeviceTensor>;
  /** Functions `host_call` nodes call, by the node's `name`. */
  readonly hostFunctions: Readonly<Record<string, HostFunction>>;
  /** What random ops (`uniform`, `normal`) draw from: the model's generator. */
  readonly generator: RandomSource;
  /** Nodes run so far (a loop body counts once per trip). */
  nodesRun: number;
  /** Loop trips taken so far, over all loops. */
  loopTrips: number;
  /** `performance.now()` when the run started (for maxRunMs). */
  readonly started: number;
  /** A profiled run on a device with GPU timestamps: where nodes go until their times are known. */
  readonly gpuNodes?: GpuNodeLog;
  /** Told of every registry op the run dispatches (replay.ts records a run to replay it). */
  readonly recorder?: StepRecorder;
  /** Model.runDevice: the run never waits for the device, so a profiled node is timed as issued (host time), not to completion. */
  readonly noWait?: boolean;
}

/** What a recorded run keeps of each registry op it ran (replay.ts). */
export interface StepRecorder {
  step(np: NodePlan, inputs: readonly (DeviceTensor | null)[], attrs: Attrs, out: readonly (DeviceTensor | undefined)[] | undefined, outs: readonly DeviceTensor[], work: number): void;
}

/** Fails the run once it is past its time limit: called before each node and each loop trip. */
export function checkTime(ctx: ExecContext, np: NodePlan): void {
  const ms = performance.now() - ctx.started;
  if (ms > ctx.limits.maxRunMs) {
    throw new RuntimeError('TIME_LIMIT', `${np.text}: the run has taken ${Math.round(ms)} ms, over the limit of ${ctx.limits.maxRunMs} ms (after ${ctx.nodesRun} nodes and ${ctx.loopTrips} loop trips); check for a loop that never ends, or raise maxRunMs in load()/createModel() options`, np.text);
  }
}

/**
 * Fails a node before it starts when its work (OpDef.work) cannot finish in the run's time left
 * even at the device's peak rate: checking between nodes alone lets one huge product run for hours.
 */
export function checkWork(ctx: ExecContext, np: NodePlan, work: number, rate: number): void {
  const needMs = (work / rate) * 1000, ms = performance.now() - ctx.started, limit = ctx.limits.maxRunMs;
  if (ms + needMs > limit) {
    throw new RuntimeError('TIME_LIMIT', `${np.text}: its ${work.toExponential(2)} multiply-adds need at least ${Math.ceil(needMs)} ms even at the ${ctx.device.backend} device's peak rate, but the run has ${Math.max(0, Math.round(limit - ms))} ms left of its limit of ${limit} ms, so it is refused before it starts; make the op smaller, or raise maxRunMs in load()/createModel() options`, np.text);
  }
}

/** The TIME_LIMIT error of a kernel its deadline stopped part way (its results are dropped). */
function interrupted(ctx: ExecContext, np: NodePlan, e: KernelDeadline): RuntimeError {
  const ms = performance.now() - ctx.started;
  return new RuntimeError('TIME_LIMIT', `${np.text}: interrupted at ${Math.round(ms)} ms, past the run's limit of ${ctx.limits.maxRunMs} ms (after ${ctx.nodesRun} nodes and ${ctx.loopTrips} loop trips); make the op smaller, or raise maxRunMs in load()/createModel() options`, np.text, { cause: e });
}

function fail(np: NodePlan, message: string, cause?: unknown): RuntimeError {
  return new RuntimeError('NODE', `${np.text}: ${message}`, np.text, cause === undefined ? undefined : { cause });
}

function errText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function input(scope: Scope, np: NodePlan, i: number): RtValue | null {
  const v = np.node.inputs[i];
  if (!v) return null;
  const rt = scope.get(v);
  if (rt === undefined) throw fail(np, `input ${i} has no value (it is not defined before this node; verify the graph)`);
  return rt;
}

function tensorInput(scope: Scope, np: NodePlan, i: number): DeviceTensor | null {
  const rt = input(scope, np, i);
  if (rt === null) return null;
  if (!isDeviceTensor(rt)) throw fail(np, `input ${i} must be a tensor, got ${describeValue(rt)}`);
  return rt;
}

function scalarInput(scope: Scope, np: NodePlan, i: number): Scalar | null {
  const rt = input(scope, np, i);
  if (rt === null) return null;
  if (typeof rt !== 'number' && typeof rt !== 'boolean') throw fail(np, `input ${i} must be a scalar, got ${describeValue(rt)}`);
  return rt;
}

/** Binds a node's results after checking them against the declared types. */
function bindOutputs(ctx: ExecContext, np: NodePlan, scope: Scope, outs: readonly RtValue[]): void {
  const decl = np.node.outputs;
  if (outs.length !== decl.length) throw fail(np, `produced ${outs.length} results, expected ${decl.length}`);
  for (let i = 0; i < decl.length; i++) {
    const why = checkValue(outs[i], decl[i].type, ctx.env);
    if (why) throw fail(np, `result ${i}: ${why}`);
    scope.bind(decl[i], outs[i]);
  }
}

/** Reads what a non-CPU device needs to size a data-dependent result (the entry's dataDims), or nothing. */
function* dataDims(ctx: ExecContext, np: NodePlan, inputs: readonly (DeviceTensor | null)[]): Exec<Record<string, number> | undefined> {
  const rule = ctx.device.backend === 'cpu' ? undefined : dataDimsOf(np.node.op);
  if (!rule) return undefined;
  const data: TypedArray[] = [];
  for (const i of rule.reads) data.push(yield inputs[i] ?? missing(np, `input ${i}`));
  return rule.dims(inputs, data);
}

/**
 * Each node's last shape inference: an op's shape rule is a pure function of its inputs' dtypes
 * and shapes and its attrs, so a node whose attrs hold no symbolic dim and whose inputs come back
 * with the same dtypes and shapes (every run of a fixed-shape model) reuses the result instead of
 * running the rule (and its attribute checks) again.
 */
const lastInference = new WeakMap<NodePlan, { readonly inputs: readonly ({ readonly dtype: DType; readonly shape: readonly number[] } | null)[]; readonly types: TensorType[]; bytes?: number }>();

function sameInputTypes(known: readonly ({ readonly dtype: DType; readonly shape: readonly number[] } | null)[], inputs: readonly (DeviceTensor | null)[]): boolean {
  if (known.length !== inputs.length) return false;
  for (let i = 0; i < inputs.length; i++) {
    const a = known[i], b = inputs[i];
    if (a === null || b === null) { if (a !== b) return false; continue; }
    if (a.dtype !== b.dtype || a.shape.length !== b.shape.length) return false;
    for (let k = 0; k < a.shape.length; k++) if (a.shape[k] !== b.shape[k]) return false;
  }
  return true;
}

/** A registry op's inputs, concrete attrs and result types (its shape rule, or the last node's when the inputs match). */
interface OpCall {
  readonly inputs: (DeviceTensor | null)[];
  readonly attrs: Node['attrs'];
  types: TensorType[];
  /** The last inference this call reused (its checked byte count may be cached there). */
  readonly known: ({ readonly types: TensorType[]; bytes?: number }) | undefined;
}

function prepareOp(ctx: ExecContext, np: NodePlan, scope: Scope): OpCall {
  const def = np.def!;
  const inputs = np.node.inputs.map((_, i) => tensorInput(scope, np, i));
  let attrs = np.node.attrs;
  if (np.symbolicAttrs) {
    const r = concreteAttrs(attrs, ctx.env);
    if ('unbound' in r) throw fail(np, `attribute '${r.attr}' holds dim '${r.unbound}', which no graph input binds; give the graph an input whose type names it`);
    attrs = r.attrs;
  }
  const known = np.symbolicAttrs ? undefined : lastInference.get(np);
  if (known && sameInputTypes(known.inputs, inputs)) return { inputs, attrs, types: known.types, known };
  const ins = inputs.map((t) => (t ? { dtype: t.dtype, shape: t.shape } : null));
  let types: TensorType[];
  try {
    types = def.infer(ins, attrs);
  } catch (e) {
    throw fail(np, errText(e), e);
  }
  if (!np.symbolicAttrs) lastInference.set(np, { inputs: ins.map((t) => t && { dtype: t.dtype, shape: [...t.shape] }), types });
  return { inputs, attrs, types, known: undefined };
}

/** A registry op: concrete attrs, shape rule, size limit, then the device kernel. */
function* runOp(ctx: ExecContext, np: NodePlan, scope: Scope): Exec<RtValue[]> {
  const call = prepareOp(ctx, np, scope);
  // Only a non-CPU device sizes data-dependent results by reading inputs (dataDims says so too).
  const dims = ctx.device.backend === 'cpu' ? undefined : yield* dataDims(ctx, np, call.inputs);
  if (dims) call.types = call.types.map((t) => ({ ...t, shape: t.shape.map((d) => (typeof d === 'string' && Object.hasOwn(dims, d) ? dims[d] : d)) }));
  return dispatchOp(ctx, np, scope, call, dims);
}

/**
 * runOp on a device that never needs to read inputs to size results (the CPU): the same steps
 * as a plain call, without the generators a node otherwise costs.
 */
function runOpSync(ctx: ExecContext, np: NodePlan, scope: Scope): void {
  checkTime(ctx, np);
  ctx.nodesRun++;
  bindOutputs(ctx, np, scope, dispatchOp(ctx, np, scope, prepareOp(ctx, np, scope), undefined));
}

/** The size limits, then the device kernel into the offered arena buffers; checks the results' shapes. */
function dispatchOp(ctx: ExecContext, np: NodePlan, scope: Scope, call: OpCall, dims: Record<string, number> | undefined): DeviceTensor[] {
  const def = np.def!;
  const { inputs, attrs, types } = call;
  // The results' bytes, checked against the tensor limit once per inferred types (the same
  // model's limits every run): a node whose types came from lastInference passed it before.
  let need = dims ? -1 : call.known?.bytes ?? -1;
  if (need < 0) {
    need = 0;
    for (const t of types) {
      if (!t.shape.every((d): d is number => typeof d === 'number')) continue; // data-dependent size
      const bytes = t.shape.reduce((a, d) => a * d, ELEMENT_BYTES[t.dtype]);
      if (bytes > ctx.limits.maxTensorBytes) {
        throw new RuntimeError('TOO_LARGE', `${np.text}: the result ${typeToString({ kind: 'tensor', ...t })} needs ${bytes} bytes, over the limit of ${ctx.limits.maxTensorBytes}; raise maxTensorBytes in load()/createModel() options if this is intended`, np.text);
      }
      need += bytes;
    }
    const cached = dims ? undefined : lastInference.get(np);
    if (cached && cached.types === types) cached.bytes = need;
  }
  // The results are counted as new buffers (a view or an in-place result may need less), so
  // the run is refused before the device allocates past the budget, never after.
  const live = scope.mem.live;
  if (live + need > ctx.limits.maxLiveBytes) {
    throw new RuntimeError('MEMORY_LIMIT', `${np.text}: its results need ${need} bytes while ${live} bytes of intermediate tensors are alive, over the run's limit of ${ctx.limits.maxLiveBytes}; raise maxLiveBytes in load()/createModel() options if this is intended`, np.text);
  }
  const rate = ctx.device.peakWorkRate;
  const timed = rate && ctx.limits.maxRunMs < Infinity;
  const work = def.work && (timed || ctx.recorder) ? def.work(inputs, attrs, types) : 0;
  if (work && timed) checkWork(ctx, np, work, rate);
  // Planned results land in the model's arena (memory.ts decides when a slot is free to take).
  const out = scope.mem.offer(np.node.outputs, types, inputs, np.releases.map((v) => scope.get(v)));
  const outs = callKernel(ctx, np, inputs, attrs, dims, out);
  for (let i = 0; i < outs.length; i++) {
    const o = outs[i], t = types[i];
    if (t && (o.shape.length !== t.shape.length || t.shape.some((d, k) => typeof d === 'number' && d !== o.shape[k]))) {
      throw fail(np, `the kernel returned shape [${o.shape.join(',')}] for result ${i}, but the op's shape rule gives [${t.shape.join(',')}] (a kernel bug)`);
    }
  }
  ctx.recorder?.step(np, inputs, attrs, out, outs, work);
  return outs;
}

/** Runs a registry op's kernel on the device; a failure other than a RuntimeError becomes one naming the node. */
export function callKernel(ctx: ExecContext, np: NodePlan, inputs: readonly (DeviceTensor | null)[], attrs: Attrs, dims: Record<string, number> | undefined, out: readonly (DeviceTensor | undefined)[] | undefined): DeviceTensor[] {
  const def = np.def!;
  // Under a time limit, a long kernel stops at the run's deadline (kernels/deadline.ts in ir-spec).
  const limited = ctx.limits.maxRunMs < Infinity;
  const outer = limited ? setKernelDeadline(ctx.started + ctx.limits.maxRunMs) : 0;
  try {
    // Random ops draw from the run's generator; an op with an element body gets its body.
    const kernel = def.random ? { generator: ctx.generator } : def.elementBody ? { regions: np.node.regions } : undefined;
    return ctx.device.dispatch(np.node.op, inputs, attrs, dims, kernel, out);
  } catch (e) {
    if (e instanceof RuntimeError) throw e;
    if (e instanceof KernelDeadline) throw interrupted(ctx, np, e);
    throw fail(np, e instanceof OpError ? e.message : `the ${ctx.device.backend} kernel failed: ${errText(e)}`, e);
  } finally {
    if (limited) setKernelDeadline(outer);
  }
}

function condition(np: NodePlan, v: RtValue, data?: TypedArray): boolean {
  if (typeof v === 'boolean') return v;
  if (data && data.length === 1) return data[0] !== 0;
  throw fail(np, `condition must be a bool scalar or a one-element bool tensor, got ${describeValue(v)}`);
}

function* runIf(ctx: ExecContext, np: NodePlan, scope: Scope): Exec<void> {
  const c = input(scope, np, 0);
  if (c === null) throw fail(np, 'the condition is missing');
  const data = isDeviceTensor(c) ? yield c : undefined;
  const region = np.regions[condition(np, c, data) ? 0 : 1];
  const child = scope.child();
  const ys = yield* runBlock(ctx, region, child);
  bindOutputs(ctx, np, scope, ys);
  child.releaseAll();
}

function* runLoop(ctx: ExecContext, np: NodePlan, scope: Scope): Exec<void> {
  const trips = scalarInput(scope, np, 0);
  const cond = scalarInput(scope, np, 1);
  if (trips !== null && typeof trips !== 'number') throw fail(np, `maxTrips must be an i32 scalar, got ${describeValue(trips)}`);
  let go = cond === null ? true : condition(np, cond);
  let carried: RtValue[] = np.node.inputs.slice(2).map((_, k) => input(scope, np, k + 2) ?? missing(np, `carried value ${k}`));
  const body = np.regions[0];
  const [iArg, ...args] = body.block.args;
  // The loop holds its carried values between trips, so a buffer yielded by one trip stays
  // counted (and alive) until the next trip's arguments have taken it over.
  scope.mem.retain(carried);
  for (const v of np.handedOver) scope.release(v);
  for (let i = 0; go && (trips === null || i < trips); i++) {
    checkTime(ctx, np);
    if (++ctx.loopTrips > ctx.limits.maxLoopTrips) {
      throw new RuntimeError('LOOP_LIMIT', `${np.text}: still running after ${i} trips of this loop, ${ctx.loopTrips - 1} trips of all loops in this run (limit ${ctx.limits.maxLoopTrips}); check the loop's condition, or raise maxLoopTrips in load()/createModel() options`, np.text);
    }
    const child = scope.child();
    child.bind(iArg, i);
    args.forEach((a, k) => child.bind(a, carried[k]));
    scope.mem.release(carried);
    const ys = yield* runBlock(ctx, body, child);
    const next = ys[0];
    if (typeof next !== 'boolean') throw fail(np, `the body's first yield (continue) must be a bool scalar, got ${describeValue(next)}`);
    go = next;
    carried = ys.slice(1);
    scope.mem.retain(carried);
    child.releaseAll();
  }
  bindOutputs(ctx, np, scope, carried);
  scope.mem.release(carried);
}

/** Calls the host function of a `host_call` node with host copies of its inputs. */
function* runHostCall(ctx: ExecContext, np: NodePlan, scope: Scope): Exec<void> {
  const name = String(np.node.attrs.name);
  const fn = Object.hasOwn(ctx.hostFunctions, name) ? ctx.hostFunctions[name] : undefined;
  if (typeof fn !== 'function') {
    throw new RuntimeError('NODE', `${np.text}: this graph calls back into JavaScript (a method marked @jit.ignore) through the host function '${name}', ` +
      `which this model was not given; pass it as createModel(graph, { hostFunctions: { '${name}': fn } })`, np.text);
  }
  const args: HostValue[] = [];
  for (let i = 0; i < np.node.inputs.length; i++) {
    const rt = input(scope, np, i) ?? missing(np, `input ${i}`);
    if (isDeviceTensor(rt)) {
      const data: TypedArray = yield rt;
      args.push({ data: data.slice() as TypedArray, shape: [...rt.shape], dtype: rt.dtype });
    } else if (typeof rt === 'number' || typeof rt === 'boolean') args.push(rt);
    else throw fail(np, `input ${i} must be a tensor or a scalar, got ${describeValue(rt)}`);
  }
  let r: unknown;
  try {
    r = fn(...args);
  } catch (e) {
    throw fail(np, `the host function '${name}' threw: ${errText(e)}`, e);
  }
  const decl = np.node.outputs;
  let results: readonly unknown[];
  if (decl.length === 0) results = [];
  else if (decl.length === 1) results = [r];
  else if (Array.isArray(r) && r.length === decl.length) results = r;
  else throw fail(np, `the host function '${name}' must return an array of ${decl.length} values, got ${Array.isArray(r) ? `${r.length} values` : typeof r}`);
  bindOutputs(ctx, np, scope, results.map((v, i) => hostResult(ctx, np, name, i, v, decl[i].type)));
}

/** A host function's result as a run-time value of type `t` (tensors are uploaded). */
function hostResult(ctx: ExecContext, np: NodePlan, name: string, i: number, v: unknown, t: IRType): RtValue {
  const bad = (why: string) => fail(np, `result ${i} of the host function '${name}' ${why}; expected ${typeToString(t)}`);
  if (t.kind === 'scalar') {
    if (typeof v !== 'number' && typeof v !== 'boolean') throw bad(`is ${v === null ? 'null' : typeof v}`);
    return v;
  }
  if (t.kind !== 'tensor') throw bad('has a type host functions cannot return');
  if (typeof v !== 'object' || v === null || !('data' in v) || !('shape' in v) || !('dtype' in v)) throw bad('is not a tensor ({ data, shape, dtype })');
  const { data, shape, dtype } = v as { data: ArrayLike<number>; shape: readonly number[]; dtype: string };
  if (dtype !== t.dtype) throw bad(`has dtype ${String(dtype)}`);
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) throw bad('has no valid shape');
  const n = shape.reduce((a, d) => a * d, 1);
  if (!data || data.length < n) throw bad(`has ${data?.length ?? 0} elements for shape [${shape.join(',')}]`);
  const out = ctx.device.alloc(t.dtype, shape);
  ctx.device.write(out, convertArray(Array.prototype.slice.call(data, 0, n) as number[], t.dtype));
  return out;
}

function missing(np: NodePlan, what: string): never {
  throw fail(np, `${what} is missing`);
}

/** One structural op or tensor op; binds its results in `scope`. */
function* runNode(ctx: ExecContext, np: NodePlan, scope: Scope): Exec<void> {
  const { node } = np;
  checkTime(ctx, np);
  ctx.nodesRun++;
  if (np.def) { bindOutputs(ctx, np, scope, yield* runOp(ctx, np, scope)); return; }
  switch (node.op) {
    case 'constant': {
      const t = ctx.constants.get(node);
      if (!t) throw fail(np, 'the constant has no tensor (executor bug)');
      bindOutputs(ctx, np, scope, [t]);
      return;
    }
    case 'scalar': {
      const out = node.outputs[0].type;
      const v = node.attrs.value;
      if (out.kind !== 'scalar' || (typeof v !== 'number' && typeof v !== 'boolean')) throw fail(np, 'needs a number or boolean value and a scalar type');
      bindOutputs(ctx, np, scope, [toScalar(v, out.dtype)]);
      return;
    }
    case 'scalar_op': {
      const out = node.outputs[0].type;
      const args = node.inputs.map((_, i) => scalarInput(scope, np, i) ?? missing(np, `operand ${i}`));
      if (out.kind !== 'scalar') throw fail(np, 'the result must be a scalar');
      let r: Scalar;
      try { r = scalarOp(String(node.attrs.fn), args, out.dtype); } catch (e) { throw fail(np, errText(e), e); }
      bindOutputs(ctx, np, scope, [r]);
      return;
    }
    case 'dim': {
      const t = tensorInput(scope, np, 0);
      const k = node.attrs.index;
      if (!t || typeof k !== 'number' || !(k >= 0 && k < t.shape.length)) throw fail(np, `index ${String(k)} is out of range for ${t ? describeValue(t) : 'no input'}`);
      bindOutputs(ctx, np, scope, [t.shape[k]]);
      return;
    }
    case 'item': {
      const t = tensorInput(scope, np, 0);
      if (!t || t.shape.some((d) => d !== 1)) throw fail(np, `needs a one-element tensor, got ${t ? describeValue(t) : 'no input'}`);
      const data: TypedArray = yield t;
      bindOutputs(ctx, np, scope, [toScalar(data[0], t.dtype)]);
      return;
    }
    case 'tuple':
      bindOutputs(ctx, np, scope, [node.inputs.map((_, i) => input(scope, np, i) ?? missing(np, `element ${i}`))]);
      return;
    case 'tuple_get': {
      const t = input(scope, np, 0);
      const k = node.attrs.index;
      if (!Array.isArray(t) || typeof k !== 'number' || !(k >= 0 && k < t.length)) throw fail(np, `cannot take element ${String(k)} of ${t === null ? 'no input' : describeValue(t)}`);
      bindOutputs(ctx, np, scope, [(t as readonly RtValue[])[k]]);
      return;
    }
    case 'to_tensor': {
      const v = scalarInput(scope, np, 0) ?? missing(np, 'the scalar');
      const out = node.outputs[0].type;
      if (out.kind !== 'tensor') throw fail(np, 'the result must be a tensor');
      const data = convertArray([Number(toScalar(v, out.dtype))], out.dtype);
      const t = ctx.device.alloc(out.dtype, []);
      ctx.device.write(t, data);
      bindOutputs(ctx, np, scope, [t]);
      return;
    }
    case 'host_call': yield* runHostCall(ctx, np, scope); return;
    case 'raise':
      throw new RuntimeError('NODE', `${np.text}: ${String(node.attrs.message)}`, np.text);
    case 'if': yield* runIf(ctx, np, scope); return;
    case 'loop': yield* runLoop(ctx, np, scope); return;
    default: throw fail(np, `unknown op '${node.op}'`);
  }
}

/**
 * Runs the nodes of a block whose args are already bound in `scope`; returns the yielded
 * values, still bound in `scope` (the caller binds them where they go, then releases `scope`).
 */
export function* runBlock(ctx: ExecContext, bp: BlockPlan, scope: Scope): Exec<RtValue[]> {
  for (const a of bp.deadArgs) scope.release(a);
  const prof = nodeProfiler();
  const sync = ctx.device.backend === 'cpu';
  for (let i = 0; i < bp.nodes.length; i++) {
    if (prof && bp.nodes[i].def) yield* runProfiled(ctx, bp.nodes[i], scope, prof);
    else if (sync && bp.nodes[i].def) runOpSync(ctx, bp.nodes[i], scope);
    else yield* runNode(ctx, bp.nodes[i], scope);
    for (const v of bp.releaseAfter[i]) scope.release(v);
  }
  return bp.block.yields.map((v: Value) => {
    const rt = scope.get(v);
    if (rt === undefined) throw new RuntimeError('NODE', `a block yields ${typeToString(v.type)} that has no value (verify the graph)`);
    return rt;
  });
}

/**
 * runNode for an attached profiler: with GPU timestamps, marks the node's dispatches for
 * ctx.gpuNodes (no wait); otherwise times the node (to completion on an asynchronous device)
 * and reports it.
 */
function* runProfiled(ctx: ExecContext, np: NodePlan, scope: Scope, prof: NodeProfiler): Exec<void> {
  const { node } = np;
  const inputShapes = node.inputs.map((v) => {
    const rt = v && scope.get(v);
    return rt && isDeviceTensor(rt) ? [...rt.shape] : null;
  });
  const timer = ctx.gpuNodes?.timer;
  const from = timer?.mark() ?? 0;
  const startMs = performance.now();
  yield* runNode(ctx, np, scope);
  const outs = node.outputs.map((v) => scope.get(v)).filter((rt): rt is DeviceTensor => rt !== undefined && isDeviceTensor(rt));
  const base = {
    op: node.op, ...(node.meta.scope ? { scope: node.meta.scope } : {}), ...(node.meta.loc ? { loc: node.meta.loc } : {}),
    covers: coveredNodes(node), inputShapes, outputBytes: outs.reduce((a, t) => a + ctx.device.byteLength(t.buffer), 0),
    backend: ctx.device.backend,
  };
  if (timer) { ctx.gpuNodes!.add(base, from, timer.mark()); return; }
  const sync = ctx.device.backend !== 'cpu' && !ctx.noWait;
  if (sync && outs.length) yield outs[0]; // waits for the dispatch to finish
  prof.onNode({ ...base, timing: ctx.device.backend === 'cpu' ? 'kernel' : sync ? 'synchronized' : 'issued', startMs, endMs: performance.now() });
}
