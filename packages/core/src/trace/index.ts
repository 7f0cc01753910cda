// Tracing (jit.trace's capture half): record an eager run through the dispatch, generalize
// declared dynamic axes, and lower to an IR graph. Checking against eager and running the
// graph are the jit layer's job (packages/kiln). When a dynamic size changes the recorded ops,
// the run is recorded again with LSTM/GRU layers as loops over their sequence length (an
// unrolled layer is the usual cause) and that recording is kept if it fixes fewer sizes.

import { parseOpAttrs, type Dim, type Graph } from '@kiln/ir-spec';
import { Tensor } from '../tensor.js';
import { defaultGenerator } from '../random.js';
import { cloneGpu, webGpuDevice, type GpuStorage } from '../device.js';
import { recordTape, TraceError, type TraceableModule, type TraceWarning } from './tape.js';
import { checkConstantArg, type ConstantArg } from './constant-args.js';
import type { GraphGuard } from './hooks.js';
import { generalizeTape, type Variant } from './generalize.js';
import type { HostFunctions } from './hooks.js';
import { lowerTape } from './lower.js';
import { flattenOutput, type OutputSpec } from './outputs.js';

export { TraceError, type TraceWarning, type TraceableModule } from './tape.js';
export { flattenOutput, unflattenOutput, type OutputSpec } from './outputs.js';
export { traceHooks, type GraphGuard, type HostFunctions } from './hooks.js';
export { sameConstant, showConstant, type ConstantArg } from './constant-args.js';
export { userLocation } from './location.js';

export interface TraceOptions {
  /** `{ argumentIndex: { dim: 'N' } }`: those dims are symbolic in the graph. */
  dynamicAxes?: Record<number, Record<number, string>>;
  /** Make every trace warning an error. */
  strict?: boolean;
  /** Graph input names (default: the forward's parameter names). */
  inputNames?: string[];
  name?: string;
}

export interface TraceResult {
  graph: Graph;
  warnings: TraceWarning[];
  outputSpec: OutputSpec;
  outputNames: string[];
  /** The eager result of the example run. */
  result: unknown;
  /** The functions of the graph's host_call nodes (@jit.ignore methods of scripted submodules), by name. */
  hostFunctions: HostFunctions;
  /** What the compiled graphs the trace inlined (scripted submodules) assumed about their attributes, with the call's module scope ('' at the root). */
  guards: { scope: string; guards: GraphGuard }[];
  /** The non-tensor arguments, baked in: a call of the graph must pass the same values. */
  constantArgs: ConstantArg[];
}

/**
 * Records `model.forward(...args)` into a graph. Tensor arguments are the graph's inputs (in
 * order); any other argument is a constant of the trace (see constant-args.ts).
 */
export function traceModule(model: TraceableModule, args: readonly unknown[], opts: TraceOptions = {}): TraceResult {
  const names = forwardParamNames(model, args.length);
  const constantArgs: ConstantArg[] = [];
  args.forEach((a, i) => {
    if (a instanceof Tensor) return;
    checkConstantArg(a, i, names[i]);
    constantArgs.push({ index: i, name: names[i], value: a });
  });
  const inputs = args.filter((a): a is Tensor => a instanceof Tensor);
  const shapes = declaredShapes(args, opts.dynamicAxes ?? {});
  const flat: { names: string[]; spec?: OutputSpec } = { names: [] };
  const flatten = (out: unknown) => {
    const r = flattenOutput(out);
    flat.names = r.names;
    flat.spec = r.spec;
    return r.tensors;
  };
  // The graph's params hold the values from before the run: a run that changes buffers in
  // place (training-mode BatchNorm) records the change as a buffer update instead.
  const initial = new Map<string, Tensor>([...(model.namedParameters?.() ?? []), ...(model.namedBuffers?.() ?? [])]
    .map(([name, t]) => [name, new Tensor({ data: t.data.slice(0, t.numel()), version: 0 }, t.shape, t.dtype)]));
  const attempt = (recurrentLoops: boolean) => {
    const { tape, result } = recordTape(model, args, flatten, { strict: opts.strict, recurrentLoops });
    const variants = recordVariants(model, args, shapes.symbols, opts.strict, recurrentLoops);
    return { tape, result, general: generalizeTape(tape, variants, accepts) };
  };
  // (Only a dynamic size can change the ops; without one there is nothing to record again.)
  const restore = shapes.symbols.size ? snapshotState(model) : () => {};
  let run = attempt(false);
  if (run.general.specialized.length) {
    // The ops change with a dynamic size: an LSTM/GRU over a dynamic sequence length unrolls a
    // different number of steps. Record again (from the same buffers and generator state) with
    // those layers as loops.
    restore();
    const again = attempt(true);
    if (again.general.specialized.length < run.general.specialized.length) run = again;
  }
  const { tape, result, general } = run;
  const warnings = [...tape.warnings];
  warnings.push(...general.warnings);
  // A symbol that changes the recorded ops (a loop over x.shape[1]) keeps its example size.
  const dims = shapes.dims.map((ds) => ds.map((d) => (typeof d === 'string' && general.specialized.includes(d) ? shapes.symbols.get(d)!.size : d)));
  if (opts.strict && warnings.length) throw new TraceError(warnings[0].message, warnings[0].loc);
  const params = initial;
  let graph: Graph, hostFunctions: HostFunctions;
  try {
    ({ graph, hostFunctions } = lowerTape(tape, {
      name: opts.name ?? model.constructor?.name ?? 'traced',
      inputNames: opts.inputNames ?? names.filter((_, i) => args[i] instanceof Tensor),
      inputShapes: dims,
      outputNames: flat.names,
      params,
      // As traced: eval-mode dropout is in the graph as `dropout {training=false}`, batch_norm
      // with running statistics; a pass may rely on it.
      metadata: typeof model.training === 'boolean' ? { training: String(model.training) } : {},
    }));
  } catch (e) {
    if (!(e instanceof TraceError) || !warnings.length) throw e;
    throw new TraceError(`${e.message}\nThe trace warned before that; the cause is likely among these:\n${warnings.map((w) => `  - ${w.message}`).join('\n')}`, e.loc);
  }
  const guards = tape.ops.flatMap((op) => (op.guards ? [{ scope: op.scope ?? '', guards: op.guards }] : []));
  return { graph, warnings, outputSpec: flat.spec!, outputNames: flat.names, result, hostFunctions, guards, constantArgs };
}

function accepts(op: string, attrs: Record<string, unknown>): boolean {
  try {
    parseOpAttrs(op, attrs);
    return true;
  } catch {
    return false;
  }
}

interface SymbolInfo { size: number; uses: { input: number; dim: number }[] }

/** The declared shapes of the tensor arguments, in order; `axes` and messages count all arguments, `uses` tensor inputs. */
function declaredShapes(args: readonly unknown[], axes: Record<number, Record<number, string>>): { dims: Dim[][]; symbols: Map<string, SymbolInfo> } {
  const symbols = new Map<string, SymbolInfo>();
  const positions = args.flatMap((a, i) => (a instanceof Tensor ? [i] : []));
  const dims = positions.map((i, input) => (args[i] as Tensor).shape.map((d, k): Dim => {
    const sym = axes[i]?.[k];
    if (sym === undefined) return d;
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(sym)) throw new Error(`jit.trace: dynamic axis name '${sym}' (input ${i}, dim ${k}) must be an identifier such as 'N'`);
    const info = symbols.get(sym);
    if (info && info.size !== d) {
      throw new Error(`jit.trace: '${sym}' names dims of different sizes in the example inputs (${info.size} and ${d} at input ${i}, dim ${k}); the same name must mean the same size`);
    }
    symbols.set(sym, { size: d, uses: [...(info?.uses ?? []), { input, dim: k }] });
    return sym;
  }));
  for (const [i, ax] of Object.entries(axes)) {
    const t = args[Number(i)];
    if (Number(i) >= args.length) throw new Error(`jit.trace: dynamicAxes names input ${i}, but only ${args.length} example inputs were given`);
    if (!(t instanceof Tensor)) throw new Error(`jit.trace: dynamicAxes names input ${i}, which is ${t === null ? 'null' : typeof t}, not a tensor; only tensor dims can be dynamic`);
    for (const k of Object.keys(ax)) {
      if (Number(k) >= t.ndim) throw new Error(`jit.trace: dynamicAxes names dim ${k} of input ${i}, which has shape [${t.shape.join(',')}]`);
    }
  }
  return { dims, symbols };
}

/**
 * Saves the buffers of `model` (and its submodules) and kiln's default generator state; the
 * returned function puts both back. Compiling and checking run eager calls on the user's module
 * and must leave it, and the next eager draw, as they were. A buffer on WebGPU is saved as a GPU
 * copy and put back by a recorded copy (nothing waits). Putting back leaves the buffers' versions
 * as they are: the values are the ones autograd saw.
 */
export function snapshotState(model: { namedBuffers?(): [string, Tensor][] } | undefined): () => void {
  const buffers = (model?.namedBuffers?.() ?? []).map(([, t]) => [t, t.device === 'webgpu' ? cloneGpu(t) : t._storage.data.slice()] as const);
  const rng = defaultGenerator.getState();
  return () => {
    for (const [t, kept] of buffers) {
      if (ArrayBuffer.isView(kept)) t._storage.data.set(kept);
      else webGpuDevice().copy(kept.gpu, (t._storage as GpuStorage).gpu, Math.min(kept.gpu.size, (t._storage as GpuStorage).gpu.size));
    }
    defaultGenerator.setState(rng);
  };
}

/**
 * One extra run per symbol with only that symbol's size changed (buffers and the generator
 * restored after). The probe size is small (2, or 3 when the example's size is 2), so tracing at
 * a big example batch costs one big run, not two; a model that cannot run at the small size (a
 * convolution longer than the probe sequence) is probed at the example's size + 1 instead.
 */
function recordVariants(model: TraceableModule, args: readonly unknown[], symbols: Map<string, SymbolInfo>, strict?: boolean, recurrentLoops = false): Variant[] {
  if (!symbols.size) return [];
  const restore = snapshotState(model);
  const record = (info: SymbolInfo, size: number) => {
    let input = 0;
    const resized = args.map((a) => {
      if (!(a instanceof Tensor)) return a;
      const i = input++;
      return info.uses.filter((u) => u.input === i).reduce((x, u) => resize(x, u.dim, size), a);
    });
    // In the caller's grad mode, as the example run: a forward may call autograd.grad.
    return recordTape(model, resized, (out) => flattenOutput(out).tensors, { strict, recurrentLoops }).tape;
  };
  try {
    return [...symbols].map(([symbol, info]) => {
      const small = info.size === 2 ? 3 : 2;
      if (small < info.size + 1) {
        try {
          return { symbol, baseSize: info.size, size: small, tape: record(info, small) };
        } catch (e) {
          if (e instanceof TraceError) throw e;
          restore();
        }
      }
      return { symbol, baseSize: info.size, size: info.size + 1, tape: record(info, info.size + 1) };
    });
  } finally {
    restore();
  }
}

/** `t` with dim `dim` resized to `size` by repeating its entries cyclically. */
function resize(t: Tensor, dim: number, size: number): Tensor {
  const shape = [...t.shape];
  const old = shape[dim];
  shape[dim] = size;
  const inner = shape.slice(dim + 1).reduce((a, d) => a * d, 1);
  const outer = shape.slice(0, dim).reduce((a, d) => a * d, 1);
  const src = t.data, out = new (src.constructor as new (n: number) => typeof src)(outer * size * inner);
  for (let o = 0; o < outer; o++) {
    for (let k = 0; k < size; k++) {
      const from = (o * old + (k % old)) * inner;
      out.set(src.subarray(from, from + inner), (o * size + k) * inner);
    }
  }
  return new Tensor({ data: out, version: 0 }, shape, t.dtype);
}

/** Parameter names of `forward` from its source (`forward(x, mask)` → ['x', 'mask']). */
function forwardParamNames(model: TraceableModule, n: number): string[] {
  const src = Function.prototype.toString.call(model.forward);
  const m = /^[^(]*\(([^)]*)\)/.exec(src);
  const names = (m?.[1] ?? '').split(',').map((p) => p.trim().replace(/^\.\.\./, '').split(/[=:\s]/)[0]).filter((p) => /^[A-Za-z_$][\w$]*$/.test(p));
  return Array.from({ length: n }, (_, i) => (names[i] && !names.slice(0, i).includes(names[i]) ? names[i] : `input${i}`));
}
