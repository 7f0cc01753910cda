// `kiln compile <model.ts> -o out.tsgraph`: load the model file, load weights, script it (or
// trace it), optimize, generate WGSL, write. The stages are exported for `kiln viz model.ts` and `kiln bench`.
// Invariant: the written graph is what the optimizer returned for the scripted/traced graph;
// every stage is timed on stderr; a user mistake is a UserError.

import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { DTYPE_SHORT } from '@kiln/ir-spec';
import { jit, loadSafetensors, noGrad, type nn, type Tensor } from 'kiln';
import { flagBool, flagList, flagString, type FlagSpec, type Parsed } from '../args.js';
import { UsageError, UserError } from '../errors.js';
import { dynamicAxesOf, exampleInput, inputsFromExport, parseInputSpec, type InputSpec } from '../input-spec.js';
import { importModelFile, pickModel } from '../load-model.js';
import { Progress } from '../progress.js';

export const COMPILE_FLAGS: Record<string, FlagSpec> = {
  output: { type: 'string', short: 'o' },
  export: { type: 'string' },
  trace: { type: 'boolean' },
  input: { type: 'list' },
  weights: { type: 'string' },
  'opt-level': { type: 'string' },
  'print-after': { type: 'list' },
  check: { type: 'boolean' },
  quiet: { type: 'boolean', short: 'q' },
  verbose: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

export const COMPILE_HELP = `Usage: kiln compile <model.ts | model.onnx> -o <out.tsgraph> [options]

Compiles a TypeScript model file, or an ONNX model (as torch.onnx.export writes it, opsets
13-17; its initializers become named parameters), into a .tsgraph file.

The model is the file's default export (an nn.Module instance), or the export named by
--export (an instance, a class constructed with no arguments, or a factory function).

The model file is imported (bundled with esbuild, then run by Node), so its top-level code
runs, as with \`node model.ts\`: keep training or other script code out of it (or in another
file). A file that calls process.exit while it is imported is an error. Method decorators such
as @jit.export, @jit.ignore and @jit.unused work as documented.

Options:
  -o, --output <file>       where to write the .tsgraph (required)
  --export <name>           the export holding the model (default: the default export)
  --trace                   trace an example run instead of scripting the source
  --input <name:type>       an input type, e.g. x:f32[N,3,32,32]; one per forward argument,
                            in order; symbols (N) are dynamic dims. A model file may export
                            the same as \`inputs\` (['x:f32[N,3,32,32]'] or { x: 'f32[N,3,32,32]' })
  --weights <file>          load a .safetensors state dict into the model first
  -O0 | -O1 | -O2           optimization level (default -O2)
  --print-after <pass>      print the IR after a pass on stdout (repeatable), e.g. fuse-elementwise;
                            KILN_DEBUG=passes prints it after every pass, KILN_DEBUG=rewrites
                            how often each rewrite rule fired (stderr)
  --check                   run the graph after every pass and compare with the unoptimized one
  -q, --quiet               no progress output
  --verbose                 show stack traces on errors
  -h, --help                this help

Examples:
  kiln compile model.ts -o model.tsgraph --input x:f32[N,3,32,32]
  kiln compile model.ts --export Classifier --trace --input x:f32[N,784] -O1 -o model.tsgraph`;

export function optLevel(p: Parsed, command: string): 0 | 1 | 2 {
  const v = flagString(p, 'opt-level') ?? '2';
  if (v === '0' || v === '1' || v === '2') return Number(v) as 0 | 1 | 2;
  throw new UsageError(`optimization level must be -O0, -O1 or -O2, got -O${v}`, command);
}

/** Runs `kiln compile`; returns the exit code. */
export async function compileCommand(p: Parsed): Promise<number> {
  if (p.positionals.length !== 1) throw new UsageError(p.positionals.length ? `expected one model file, got ${p.positionals.length}: ${p.positionals.join(' ')}` : 'missing the model file', 'compile');
  const out = flagString(p, 'output');
  if (!out) throw new UsageError('missing -o <out.tsgraph>', 'compile');
  const progress = new Progress(flagBool(p, 'quiet'));
  const src = p.positionals[0];
  const optimized = src.toLowerCase().endsWith('.onnx') ? await compileOnnxFile(src, p, progress) : await compileModelFile(src, p, progress, 'compile');
  const { kernels, unsupported } = await progress.stage('codegen', 'WGSL', () => jit.generateWgsl(optimized.graph));
  await progress.stage('write', out, () => optimized.save(out, { kernels }));
  const nodes = countNodes(optimized.graph.body.nodes);
  if (!flagBool(p, 'quiet')) {
    const gpu = unsupported.length ? `CPU only (no WGSL for ${[...new Set(unsupported.map((u) => u.op))].join(', ')})` : 'CPU and WebGPU';
    process.stderr.write(`wrote ${out}: ${nodes} nodes, ${optimized.graph.tensors.size} tensors, ${kernels.length} WGSL kernels, -O${optLevel(p, 'compile')}; runs on ${gpu}\n`);
  }
  return 0;
}

/**
 * `kiln compile model.onnx`: imports the ONNX model (jit.loadOnnx: initializers become named
 * parameters, dim_params symbolic dims) and optimizes it like a scripted graph.
 */
export async function compileOnnxFile(src: string, p: Parsed, progress: Progress): Promise<jit.OptimizedModule> {
  for (const flag of ['trace', 'export', 'weights', 'input']) {
    if (p.flags.has(flag)) throw new UsageError(`--${flag} does not apply to an ONNX model (its graph, weights and input types are in the file)`, 'compile');
  }
  const shown = relative(process.cwd(), src) || src;
  const imported = await progress.stage('import', shown, () => {
    try {
      return jit.loadOnnx(src);
    } catch (e) {
      throw new UserError(`${shown}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
    }
  });
  const examples = imported.graph.inputs.filter((i) => i.kind === 'input').map((i) => {
    const t = i.value.type;
    return exampleInput({ name: i.name, dtype: t.kind === 'tensor' || t.kind === 'scalar' ? t.dtype : 'float32', shape: t.kind === 'tensor' ? t.shape : [] });
  });
  return optimize(imported, p, progress, optLevel(p, 'compile'), examples);
}

/** A model file loaded for compiling: the model (weights loaded, eval mode) and its input types. */
export interface LoadedModel {
  readonly model: nn.Module;
  readonly specs: readonly InputSpec[];
  /** The absolute path of the model file (the scripter reads its source). */
  readonly file: string;
}

/**
 * Loads, scripts or traces, and optimizes a model file as the compile flags in `p` say
 * (shared by `kiln compile` and `kiln viz model.ts`).
 */
export async function compileModelFile(src: string, p: Parsed, progress: Progress, command: string): Promise<jit.OptimizedModule> {
  const level = optLevel(p, command);
  checkInputFlags(p, command);
  const loaded = await loadModelFile(src, p, progress);
  const examples = loaded.specs.map((s) => exampleInput(s));
  const compiled = await frontend(loaded, p, progress, examples);
  return optimize(compiled, p, progress, level, examples);
}

/** The --input flags parse (a usage error naming the bad part otherwise): checked before the model file is imported. */
export function checkInputFlags(p: Parsed, command: string): void {
  for (const f of flagList(p, 'input')) {
    try {
      parseInputSpec(f);
    } catch (e) {
      if (e instanceof UserError) throw new UsageError(e.message, command);
      throw e;
    }
  }
}

/** Imports the file, picks the model (--export), reads the input types and loads --weights. */
export async function loadModelFile(src: string, p: Parsed, progress: Progress): Promise<LoadedModel> {
  const shownSrc = relative(process.cwd(), src) || src;
  const loaded = await progress.stage('load', shownSrc, () => importModelFile(src));
  const model = pickModel(loaded, flagString(p, 'export'));
  const specs = inputSpecs(p, loaded.exports, shownSrc);

  const weights = flagString(p, 'weights');
  if (weights) {
    await progress.stage('weights', weights, () => {
      let sd: Record<string, Tensor>;
      try {
        sd = loadSafetensors(new Uint8Array(readFileSync(weights)));
      } catch (e) {
        throw new UserError(`${weights}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
      }
      try {
        model.loadStateDict(sd);
      } catch (e) {
        throw new UserError(`${weights}: the state dict does not fit ${model.constructor.name}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
      }
    });
  }
  model.eval();
  return { model, specs, file: loaded.file };
}

/** jit.script (default, reading the file's source) or jit.trace (--trace) on `examples`. */
export async function frontend(m: LoadedModel, p: Parsed, progress: Progress, examples: Tensor[]): Promise<jit.CompiledModule> {
  const { model, specs } = m;
  const trace = flagBool(p, 'trace');
  const compiled = await progress.stage(trace ? 'trace' : 'script', `${model.constructor.name}(${specs.map(specText).join(', ')})`, (): jit.CompiledModule => {
    if (trace) return noGrad(() => jit.trace(model as nn.Module & { forward(...x: Tensor[]): unknown }, examples, { dynamicAxes: dynamicAxesOf(specs), warn: false }));
    // Every symbolic dim of the --input types is symbolic in the graph (x:f32[N,T,6]), as for --trace.
    return jit.script(model, { sourceFile: m.file, inputs: examples, dynamicAxes: dynamicAxesOf(specs) });
  });
  for (const w of compiled.warnings ?? []) process.stderr.write(`warning: ${w.message}\n`);
  return compiled;
}

/** jit.optimizeForInference at `level` with --print-after and --check; each pass is reported. */
export async function optimize(compiled: jit.CompiledModule, p: Parsed, progress: Progress, level: 0 | 1 | 2, examples: Tensor[]): Promise<jit.OptimizedModule> {
  const printAfter = flagList(p, 'print-after');
  const optimized = await progress.stage('optimize', `-O${level}${flagBool(p, 'check') ? ', checking each pass' : ''}`, () => jit.optimizeForInference(compiled, {
    level,
    printAfter,
    checkEach: flagBool(p, 'check') ? { inputs: examples } : undefined,
  }));
  const ran = optimized.timings.map((t) => t.pass);
  for (const name of printAfter.filter((n) => !ran.includes(n))) {
    process.stderr.write(`warning: --print-after ${name}: no such pass ran at -O${level}; the passes were: ${ran.join(', ') || 'none'}\n`);
  }
  for (const t of optimized.timings) progress.report(`  ${t.pass}`, t.ms, t.changed ? '' : '(no change)');
  return optimized;
}

function specText(s: InputSpec): string {
  return `${s.name}: ${DTYPE_SHORT[s.dtype]}[${s.shape.join(',')}]`;
}

/** --input flags, else the file's `inputs` export, else an error saying how to give them. */
function inputSpecs(p: Parsed, exports: Record<string, unknown>, shown: string): InputSpec[] {
  const flags = flagList(p, 'input');
  if (flags.length) return flags.map((f) => parseInputSpec(f));
  if ('inputs' in exports) return inputsFromExport(exports.inputs, shown);
  throw new UserError(`${shown}: the input types are unknown; pass --input x:f32[N,3,32,32] (one per forward argument) or export them from the file: export const inputs = ['x:f32[N,3,32,32]']`);
}

interface HasRegions { readonly regions: readonly { readonly nodes: readonly HasRegions[] }[] }

/** Nodes of a block, regions included. */
export function countNodes(nodes: readonly HasRegions[]): number {
  return nodes.reduce((n, node) => n + 1 + node.regions.reduce((m, r) => m + countNodes(r.nodes), 0), 0);
}
