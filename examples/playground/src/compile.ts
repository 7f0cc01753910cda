// The playground's compiler half, the same in the page and in Node (the tests run it in both):
// TypeScript source → transpiled and evaluated against the bundled 'kiln' → jit.script (or
// jit.trace) over the in-memory source → the -O2 passes one at a time (IR text after each) →
// WGSL per kernel → `.tsgraph` bytes. Invariant: nothing here reads a file or the network; every
// mistake in the user's source comes back as a Diagnostic at its line and column (1-based),
// never as a stack trace.

import * as kiln from 'kiln';
import { jit, manualSeed, nn, randn, zeros, type Tensor } from 'kiln';
import { LEVELS, provideSource, provideTsMorph, runPass, ScriptError, generateWgsl, type Unsupported } from '@kiln/compiler';
import { DTYPE_FROM_SHORT, encodeTsgraph, printGraph, type DType, type Graph } from '@kiln/ir-spec';
import type { KernelRecord } from '@kiln/runtime';
import * as tsMorph from 'ts-morph';

// The scripter loads ts-morph at its first use with Node's require; a page has none, so it is
// handed the bundled one.
provideTsMorph(tsMorph);
const { ts } = tsMorph;

/** Where the editor's text lives for the scripter (no file system: provideSource holds it). */
export const MODEL_PATH = '/playground/model.ts';

/** A problem in the user's source, at a 1-based line and column. */
export interface Diagnostic { readonly line: number; readonly col: number; readonly message: string; readonly severity: 'error' | 'warning' }

/** One input of the model: `x:f32[N,3,32,32]`; symbols are dynamic dims. */
export interface InputSpec { readonly name: string; readonly dtype: DType; readonly shape: readonly (number | string)[] }

/** The IR after capture (`capture`) and after each pass that ran. */
export interface Stage { readonly name: string; readonly text: string; readonly ms: number; readonly changed: boolean; readonly graph: Graph }

export interface CompileOptions {
  /** Script the source (default) or trace one run on the example inputs. */
  readonly mode?: 'script' | 'trace';
  /** The passes to run, in -O2's order (default: all of -O2's). */
  readonly passes?: readonly string[];
  /** Seed of kiln's generator before the model is constructed (its weights) and the example inputs drawn (default 0). */
  readonly seed?: number;
  /** Size given to every symbolic dim of the example inputs (default 2). */
  readonly symbolSize?: number;
}

export type CompileResult =
  | { readonly ok: true; readonly className: string; readonly specs: readonly InputSpec[]; readonly stages: readonly Stage[];
      readonly kernels: readonly KernelRecord[]; readonly unsupported: readonly Unsupported[]; readonly bytes: Uint8Array;
      readonly examples: readonly { data: Float32Array | Int32Array | Uint8Array; shape: number[]; dtype: DType }[];
      readonly warnings: readonly string[] }
  | { readonly ok: false; readonly stage: string; readonly diagnostics: readonly Diagnostic[] };

/** Every pass the playground offers, in the order -O2 runs them. */
export const ALL_PASSES: readonly string[] = LEVELS[2];

/** A failure located in the source (thrown inside compile, returned as its result). */
class SourceProblem extends Error {
  constructor(readonly stage: string, readonly diagnostics: Diagnostic[]) { super(diagnostics.map((d) => `${d.line}:${d.col}: ${d.message}`).join('\n')); }
}

const at = (line: number, col: number, message: string): Diagnostic => ({ line, col, message, severity: 'error' });

/** Compiles `source` (a model file: default export an nn.Module instance, class or factory; `inputs` its input types). */
export function compileSource(source: string, opts: CompileOptions = {}): CompileResult {
  try {
    return compileOrThrow(source, opts);
  } catch (e) {
    if (e instanceof SourceProblem) return { ok: false, stage: e.stage, diagnostics: e.diagnostics };
    throw e;
  }
}

function compileOrThrow(source: string, opts: CompileOptions): CompileResult {
  const js = transpile(source);
  manualSeed(opts.seed ?? 0);
  const exports = evaluate(js, source);
  const model = pickModel(exports, source);
  const specs = inputSpecs(exports, source);
  model.eval();
  const examples = specs.map((s) => exampleTensor(s, opts.symbolSize ?? 2));
  const dynamicAxes: Record<number, Record<number, string>> = {};
  specs.forEach((s, i) => s.shape.forEach((d, j) => { if (typeof d === 'string') (dynamicAxes[i] ??= {})[j] = d; }));
  provideSource(MODEL_PATH, source);
  const mode = opts.mode ?? 'script';
  let compiled: jit.CompiledModule;
  const t0 = performance.now();
  try {
    compiled = mode === 'trace'
      ? kiln.noGrad(() => jit.trace(model as nn.Module & { forward(...x: Tensor[]): unknown }, examples, { dynamicAxes, warn: false }))
      : jit.script(model, { sourceFile: MODEL_PATH, inputs: examples, dynamicAxes });
  } catch (e) {
    throw new SourceProblem(mode, [locate(e, source)]);
  }
  const stages: Stage[] = [{ name: 'capture', text: printGraph(compiled.graph), ms: performance.now() - t0, changed: true, graph: compiled.graph }];
  const chosen = new Set(opts.passes ?? ALL_PASSES);
  let g = compiled.graph;
  for (const name of ALL_PASSES) {
    if (!chosen.has(name)) continue;
    const t = performance.now();
    const next = runPass(name, g);
    stages.push({ name, text: next === g ? stages[stages.length - 1].text : printGraph(next), ms: performance.now() - t, changed: next !== g, graph: next });
    g = next;
  }
  const { kernels, unsupported } = generateWgsl(g);
  const bytes = encodeTsgraph(g, { producer: { name: 'kiln-playground', version: '0.1.0' }, kernels });
  const warnings = (compiled.warnings ?? []).map((w) => w.message);
  return {
    ok: true, className: model.constructor.name, specs, stages, kernels, unsupported, bytes, warnings,
    examples: examples.map((t) => ({ data: t.toArray() as Float32Array, shape: [...t.shape], dtype: t.dtype as DType })),
  };
}

/** TypeScript → CommonJS JavaScript; syntax errors become diagnostics at their line:col. */
export function transpile(source: string): string {
  const out = ts.transpileModule(source, {
    fileName: 'model.ts', reportDiagnostics: true,
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, useDefineForClassFields: true, experimentalDecorators: false },
  });
  const errors = (out.diagnostics ?? []).filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (errors.length) {
    throw new SourceProblem('syntax', errors.map((d) => {
      const { line, character } = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : { line: 0, character: 0 };
      return at(line + 1, character + 1, ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    }));
  }
  return out.outputText;
}

/** Runs the module's code with `kiln` as its only import; a throw is located in the source when its stack says where. */
function evaluate(js: string, source: string): Record<string, unknown> {
  const module = { exports: {} as Record<string, unknown> };
  const require = (name: string): unknown => {
    if (name === 'kiln') return kiln;
    throw new SourceProblem('import', [at(lineOf(source, new RegExp(`from\\s+['"]${name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}['"]`)), 1,
      `the playground's model file can import 'kiln' only, not '${name}'; put what you need in this file`)]);
  };
  try {
    // The user's own code, run as the CLI runs a model file (its top-level code runs).
    new Function('require', 'exports', 'module', js)(require, module.exports, module);
  } catch (e) {
    if (e instanceof SourceProblem) throw e;
    throw new SourceProblem('evaluate', [at(1, 1, `the model file throws when run: ${e instanceof Error ? e.message : String(e)}`)]);
  }
  return module.exports;
}

/** The 1-based line of the first match of `re` in `source` (1 when none). */
function lineOf(source: string, re: RegExp): number {
  const m = re.exec(source);
  return m ? source.slice(0, m.index).split('\n').length : 1;
}

function pickModel(exports: Record<string, unknown>, source: string): nn.Module {
  const v = exports.default;
  const where = lineOf(source, /export\s+default/);
  if (v === undefined) throw new SourceProblem('model', [at(where, 1, 'no default export: end the file with `export default new MyModel();`')]);
  if (v instanceof nn.Module) return v;
  if (typeof v === 'function') {
    let made: unknown;
    try {
      made = /^class[\s{]/.test(Function.prototype.toString.call(v)) ? new (v as new () => unknown)() : (v as () => unknown)();
    } catch (e) {
      throw new SourceProblem('model', [at(where, 1, `constructing the model throws: ${e instanceof Error ? e.message : String(e)}`)]);
    }
    if (made instanceof nn.Module) return made;
  }
  throw new SourceProblem('model', [at(where, 1, 'the default export is not an nn.Module (nor a class or factory making one); export default new MyModel()')]);
}

/** The `inputs` export: ['x:f32[N,3,32,32]'] or { x: 'f32[N,3,32,32]' }. */
export function inputSpecs(exports: Record<string, unknown>, source: string): InputSpec[] {
  const v = exports.inputs;
  const where = lineOf(source, /export\s+const\s+inputs/);
  const fix = "export the input types, e.g. export const inputs = { x: 'f32[N,3,32,32]' } (dtypes f32, i32, bool; symbols such as N are dynamic)";
  let texts: string[];
  if (Array.isArray(v)) texts = v.map(String);
  else if (v && typeof v === 'object') texts = Object.entries(v).map(([k, t]) => `${k}:${String(t)}`);
  else throw new SourceProblem('inputs', [at(where, 1, `no input types: ${fix}`)]);
  return texts.map((text) => {
    const m = /^\s*([A-Za-z_]\w*)\s*:\s*([a-z0-9]+)\[([^\]]*)\]\s*$/.exec(text);
    if (!m || !Object.hasOwn(DTYPE_FROM_SHORT, m[2])) throw new SourceProblem('inputs', [at(where, 1, `input '${text}' is not name:dtype[dims]; ${fix}`)]);
    const shape = m[3].split(',').map((d) => d.trim()).filter((d) => d !== '').map((d) => (/^\d+$/.test(d) ? Number(d) : d));
    const bad = shape.find((d) => typeof d === 'string' && !/^[A-Za-z_]\w*$/.test(d));
    if (bad !== undefined) throw new SourceProblem('inputs', [at(where, 1, `input '${text}': dim '${bad}' is neither a number nor a symbol such as N`)]);
    return { name: m[1], dtype: DTYPE_FROM_SHORT[m[2]], shape };
  });
}

/** A seeded example input: standard normal floats (zeros for integer and bool inputs), every symbol `size`. */
export function exampleTensor(spec: InputSpec, size: number): Tensor {
  const shape = spec.shape.map((d) => (typeof d === 'number' ? d : size));
  return spec.dtype === 'float32' ? randn(shape) : zeros(shape, { dtype: spec.dtype });
}

/** A diagnostic for a capture failure: the ScriptError's own place, else the line the stack names in the model file. */
function locate(e: unknown, source: string): Diagnostic {
  if (e instanceof ScriptError && e.file === MODEL_PATH) return at(e.line, e.col, e.reason);
  const message = e instanceof Error ? e.message : String(e);
  if (e instanceof ScriptError) return at(lineOf(source, /forward\s*\(/), 1, message);
  return at(lineOf(source, /forward\s*\(/), 1, message);
}
