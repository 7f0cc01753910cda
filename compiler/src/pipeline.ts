// The optimization pipeline: a readable list of named passes per level, run in order, with the
// debugging aids of STYLE.md §6–8 (IR text after chosen passes, the verifier after each pass,
// a numeric check against the unoptimized graph after each pass) and per-pass timings.
// Invariant: the input graph is never mutated; every pass either returns its input (no change)
// or a new graph that computes the same outputs. Dead code is swept HERE and nowhere else: a
// pass leaves what it made unused behind, and `runPass` runs eliminate-dead-code right after
// every pass (except after plan-memory, which only annotates, and whose plan names the values
// as they are), so each pass sees, and hands on, a graph without dead nodes. A sweep of a graph
// without dead code returns that graph, so an idle pass on a clean graph still changes nothing.

import { printGraph, verifyGraph, VerifyError, type Graph } from '@kiln/ir-spec';
import { createModel, type InputValue, type Output } from '@kiln/runtime';
import { canonicalize } from './passes/canonicalize.js';
import { eliminateCommonSubexpressions } from './passes/eliminate-common-subexpressions.js';
import { eliminateDeadCode } from './passes/eliminate-dead-code.js';
import { foldChannelAffine } from './passes/fold-channel-affine.js';
import { foldConstants } from './passes/fold-constants.js';
import { foldConvBn } from './passes/fold-conv-bn.js';
import { foldLinearBn } from './passes/fold-linear-bn.js';
import { freeze } from './passes/freeze.js';
import { fuseElementwise } from './passes/fuse-elementwise.js';
import { fuseEpilogue } from './passes/fuse-epilogue.js';
import { planMemory } from './passes/plan-memory.js';
import { removeDropout } from './passes/remove-dropout.js';

/** What the passes may need to know about the target (the same for every pass of a run). */
export interface PassOptions {
  /** Storage buffers one WebGPU kernel may bind (default 8, WebGPU's default `maxStorageBuffersPerShaderStage`). */
  readonly maxStorageBuffers?: number;
  /** fuse-elementwise fuses only chains whose result has at most this many elements (default: any). */
  readonly fuseMaxElements?: number;
}

/** A pass: most ignore the options; those that size kernels (fuse-elementwise) read the target's limits. */
export type Pass = (g: Graph, opts?: PassOptions) => Graph;

/** Every pass by its name (= file name = CLI name = golden-test folder). */
export const PASSES: Readonly<Record<string, Pass>> = {
  'freeze': freeze,
  'eliminate-dead-code': eliminateDeadCode,
  'eliminate-common-subexpressions': eliminateCommonSubexpressions,
  'fold-constants': foldConstants,
  'canonicalize': canonicalize,
  'remove-dropout': removeDropout,
  'fold-conv-bn': foldConvBn,
  'fold-linear-bn': foldLinearBn,
  'fold-channel-affine': foldChannelAffine,
  'fuse-epilogue': fuseEpilogue,
  'fuse-elementwise': (g, opts) => fuseElementwise(g, { maxStorageBuffers: opts?.maxStorageBuffers, maxElements: opts?.fuseMaxElements }),
  'plan-memory': planMemory,
};

/** Passes after which no sweep runs: eliminate-dead-code itself, and plan-memory (it only annotates). */
const NO_SWEEP: ReadonlySet<string> = new Set(['eliminate-dead-code', 'plan-memory']);

/**
 * Runs pass `name` on `g`, then sweeps the dead code it left (or the input came with): what a
 * pass means inside the pipeline (the pass golden tests run passes this way).
 *
 * @example
 * runPass('fuse-epilogue', g); // the absorbed conv2d nodes and unused weights are gone
 */
export function runPass(name: string, g: Graph, opts?: PassOptions): Graph {
  const pass = Object.hasOwn(PASSES, name) ? PASSES[name] : undefined;
  if (!pass) throw new PassError(`unknown pass '${name}'; the passes are ${Object.keys(PASSES).join(', ')}`, name);
  const next = pass(g, opts);
  return NO_SWEEP.has(name) ? next : eliminateDeadCode(next);
}

/** -O1: freeze and cleanups. */
const O1 = ['freeze', 'remove-dropout', 'fold-constants', 'canonicalize', 'eliminate-common-subexpressions'];

/**
 * The passes of each level, in order. Every pass is followed by the dead-code sweep (runPass),
 * so eliminate-dead-code needs no place of its own in a list.
 */
export const LEVELS: Readonly<Record<0 | 1 | 2, readonly string[]>> = {
  0: [],
  1: O1,
  2: [...O1, 'fold-conv-bn', 'fold-linear-bn', 'fold-channel-affine', 'fuse-epilogue', 'fuse-elementwise', 'plan-memory'],
};

export interface PipelineOptions extends PassOptions {
  /** -O level (default 2): 0 none, 1 freeze and cleanups, 2 everything. */
  readonly level?: 0 | 1 | 2;
  /** Run exactly these passes (names of PASSES) instead of the level's list. */
  readonly passes?: readonly string[];
  /** Names of passes after which the IR text is recorded in `printed` (and printed with `print`). */
  readonly printAfter?: readonly string[];
  /** Where printAfter text goes besides the result (default: nowhere). */
  readonly print?: (text: string) => void;
  /** Run the IR verifier after every pass (default false). */
  readonly verifyEach?: boolean;
  /** Run the graph after every pass on these inputs and compare with the unoptimized graph. */
  readonly checkEach?: { readonly inputs: readonly InputValue[]; readonly rtol?: number; readonly atol?: number };
}

export interface PassRecord {
  readonly pass: string;
  /** Time of the pass and of the dead-code sweep after it. */
  readonly ms: number;
  readonly changed: boolean;
}

export interface PipelineResult {
  readonly graph: Graph;
  /** One entry per pass run, in order. */
  readonly timings: readonly PassRecord[];
  /** IR text after each pass named in printAfter. */
  readonly printed: readonly { pass: string; text: string }[];
}

/** A pass whose output no longer verifies or computes the same values (verifyEach, checkEach). */
export class PassError extends Error {
  constructor(message: string, readonly pass: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'PassError';
  }
}

function compare(pass: string, want: readonly Output[], got: readonly Output[], rtol: number, atol: number): void {
  if (want.length !== got.length) throw new PassError(`checkEach: after pass '${pass}' the graph has ${got.length} outputs, the unoptimized graph ${want.length}`, pass);
  want.forEach((w, i) => {
    const g = got[i];
    if (w.shape.join(',') !== g.shape.join(',')) throw new PassError(`checkEach: after pass '${pass}' output '${w.name}' has shape [${g.shape}], the unoptimized graph [${w.shape}]`, pass);
    for (let k = 0; k < w.data.length; k++) {
      const a = Number(g.data[k]), b = Number(w.data[k]);
      if (!(Math.abs(a - b) <= atol + rtol * Math.abs(b)) && !(Number.isNaN(a) && Number.isNaN(b))) {
        throw new PassError(`checkEach: pass '${pass}' is the first whose output diverges: output '${w.name}' element ${k} is ${a}, the unoptimized graph gives ${b}; rerun with printAfter: ['${pass}'] to see its IR`, pass);
      }
    }
  });
}

/** A printer when the KILN_DEBUG environment variable lists `passes` (Node only). */
function debugPasses(): ((text: string) => void) | undefined {
  const proc = (globalThis as { process?: { env?: Record<string, string | undefined>; stderr?: { write(s: string): void } } }).process;
  const flags = proc?.env?.KILN_DEBUG?.split(',').map((f) => f.trim()) ?? [];
  return flags.includes('passes') && proc?.stderr ? (t) => proc.stderr!.write(`${t}\n`) : undefined;
}

/**
 * Runs the optimization passes of `level` (or exactly `passes`) over `g`.
 *
 * @example
 * ```ts
 * const { graph, timings } = runPipeline(traced.graph, { level: 2, verifyEach: true });
 * console.log(timings.map((t) => `${t.pass} ${t.ms.toFixed(1)}ms`).join('\n'));
 * ```
 */
export function runPipeline(g: Graph, opts: PipelineOptions = {}): PipelineResult {
  const names = opts.passes ?? LEVELS[opts.level ?? 2];
  // KILN_DEBUG=passes (STYLE.md §14): the IR after every pass and its time, on stderr.
  const debug = debugPasses();
  if (debug) opts = { ...opts, printAfter: [...(opts.printAfter ?? []), ...names], print: opts.print ?? debug };
  const unknown = names.filter((n) => !Object.hasOwn(PASSES, n));
  if (unknown.length) throw new PassError(`unknown pass${unknown.length > 1 ? 'es' : ''} ${unknown.map((n) => `'${n}'`).join(', ')}; the passes are ${Object.keys(PASSES).join(', ')}`, unknown[0]);
  const printAfter = new Set(opts.printAfter ?? []);
  const check = opts.checkEach;
  const want = check ? createModel(g).runSync(check.inputs) : undefined;
  const timings: PassRecord[] = [];
  const printed: { pass: string; text: string }[] = [];
  let cur = g;
  for (const name of names) {
    const t0 = performance.now();
    // The pass and the sweep after it count as one (its `ms` includes the sweep).
    const next = runPass(name, cur, { maxStorageBuffers: opts.maxStorageBuffers, fuseMaxElements: opts.fuseMaxElements });
    timings.push({ pass: name, ms: performance.now() - t0, changed: next !== cur });
    cur = next;
    if (opts.verifyEach) {
      try { verifyGraph(cur); } catch (e) {
        if (!(e instanceof VerifyError)) throw e;
        throw new PassError(`verifyEach: the graph after pass '${name}' does not verify: ${e.message}`, name, { cause: e });
      }
    }
    if (printAfter.has(name)) {
      const text = printGraph(cur);
      printed.push({ pass: name, text });
      opts.print?.(`// ---- IR after ${name} (${timings[timings.length - 1].ms.toFixed(2)} ms) ----\n${text}`);
    }
    if (check && want) compare(name, want, createModel(cur).runSync(check.inputs), check.rtol ?? 1e-5, check.atol ?? 1e-5);
  }
  return { graph: cur, timings, printed };
}
