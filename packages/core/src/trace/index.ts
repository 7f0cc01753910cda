// Tracing (jit.trace's capture half): record an eager run through the dispatch, generalize
// declared dynamic axes, and lower to an IR graph. Checking against eager and running the
// graph are the jit layer's job (packages/kiln).

import { parseOpAttrs, type Dim, type Graph } from '@kiln/ir-spec';
import { Tensor } from '../tensor.js';
import { noGrad } from '../autograd/grad-mode.js';
import { defaultGenerator } from '../random.js';
import { recordTape, TraceError, type TraceableModule, type TraceWarning } from './tape.js';
import { generalizeTape, type Variant } from './generalize.js';
import type { HostFunctions } from './hooks.js';
import { lowerTape } from './lower.js';
import { flattenOutput, type OutputSpec } from './outputs.js';

export { TraceError, type TraceWarning, type TraceableModule } from './tape.js';
export { flattenOutput, unflattenOutput, type OutputSpec } from './outputs.js';
export { traceHooks, type HostFunctions } from './hooks.js';
export { userLocation } from './location.js';

export interface TraceOptions {
  /** `{ inputIndex: { dim: 'N' } }`: those dims are symbolic in the graph. */
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
}

/** Records `model.forward(...inputs)` into a graph. */
export function traceModule(model: TraceableModule, inputs: Tensor[], opts: TraceOptions = {}): TraceResult {
  const shapes = declaredShapes(inputs, opts.dynamicAxes ?? {});
  const flat: { names: string[]; spec?: OutputSpec } = { names: [] };
  const flatten = (out: unknown) => {
    const r = flattenOutput(out);
    flat.names = r.names;
    flat.spec = r.spec;
    return r.tensors;
  };
  // The graph's params hold the values from before the run: a run that changes buffers in
  // place (training-mode BatchNorm) records the change as a buffer update instead.
  const before = new Map<string, Tensor>([...(model.namedParameters?.() ?? []), ...(model.namedBuffers?.() ?? [])]
    .map(([name, t]) => [name, new Tensor({ data: t.data.slice(0, t.numel), version: 0 }, t.shape, t.dtype)]));
  const { tape, result } = recordTape(model, inputs, flatten, { strict: opts.strict });
  const warnings = [...tape.warnings];
  const variants = recordVariants(model, inputs, shapes.symbols, opts.strict);
  const general = generalizeTape(tape, variants, accepts);
  warnings.push(...general.warnings);
  // A symbol that changes the recorded ops (a loop over x.shape[1]) keeps its example size.
  const dims = shapes.dims.map((ds) => ds.map((d) => (typeof d === 'string' && general.specialized.includes(d) ? shapes.symbols.get(d)!.size : d)));
  if (opts.strict && warnings.length) throw new TraceError(warnings[0].message, warnings[0].loc);
  const params = before;
  let graph: Graph, hostFunctions: HostFunctions;
  try {
    ({ graph, hostFunctions } = lowerTape(tape, {
      name: opts.name ?? model.constructor?.name ?? 'traced',
      inputNames: opts.inputNames ?? forwardParamNames(model, inputs.length),
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
  return { graph, warnings, outputSpec: flat.spec!, outputNames: flat.names, result, hostFunctions };
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

function declaredShapes(inputs: Tensor[], axes: Record<number, Record<number, string>>): { dims: Dim[][]; symbols: Map<string, SymbolInfo> } {
  const symbols = new Map<string, SymbolInfo>();
  const dims = inputs.map((t, i) => t.shape.map((d, k): Dim => {
    const sym = axes[i]?.[k];
    if (sym === undefined) return d;
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(sym)) throw new Error(`jit.trace: dynamic axis name '${sym}' (input ${i}, dim ${k}) must be an identifier such as 'N'`);
    const info = symbols.get(sym);
    if (info && info.size !== d) {
      throw new Error(`jit.trace: '${sym}' names dims of different sizes in the example inputs (${info.size} and ${d} at input ${i}, dim ${k}); the same name must mean the same size`);
    }
    symbols.set(sym, { size: d, uses: [...(info?.uses ?? []), { input: i, dim: k }] });
    return sym;
  }));
  for (const [i, ax] of Object.entries(axes)) {
    const t = inputs[Number(i)];
    if (!t) throw new Error(`jit.trace: dynamicAxes names input ${i}, but only ${inputs.length} example inputs were given`);
    for (const k of Object.keys(ax)) {
      if (Number(k) >= t.ndim) throw new Error(`jit.trace: dynamicAxes names dim ${k} of input ${i}, which has shape [${t.shape.join(',')}]`);
    }
  }
  return { dims, symbols };
}

/** One extra run per symbol with only that symbol's size changed (buffers and the generator restored after). */
function recordVariants(model: TraceableModule, inputs: Tensor[], symbols: Map<string, SymbolInfo>, strict?: boolean): Variant[] {
  if (!symbols.size) return [];
  const buffers = (model.namedBuffers?.() ?? []).map(([, t]) => [t, t.data.slice()] as const);
  const rng = defaultGenerator.getState();
  try {
    return [...symbols].map(([symbol, info]) => {
      const size = info.size + 1;
      const resized = inputs.map((t, i) => info.uses.filter((u) => u.input === i).reduce((x, u) => resize(x, u.dim, size), t));
      const { tape } = noGrad(() => recordTape(model, resized, (out) => flattenOutput(out).tensors, { strict }));
      return { symbol, baseSize: info.size, size, tape };
    });
  } finally {
    for (const [t, data] of buffers) t._storage.data.set(data);
    defaultGenerator.setState(rng);
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
