// jit.freeze and jit.optimizeForInference: a traced module's graph through the compiler's
// pipeline, wrapped again as a module that forwards, saves to `.tsgraph` and runs in the
// runtime alone. Invariant: the result computes what the source module computes (every pass is
// checked by tests against the runtime; `checkEach` re-checks a given input after each pass).

import { trace as tracer, zeros, type Tensor } from '@kiln/core';
import { runPipeline, type PassRecord, type PipelineOptions } from '@kiln/compiler';
import { bufferUpdates, type Graph } from '@kiln/ir-spec';
import type { HostFunction } from '@kiln/runtime';
import { TracedModule } from './traced-module.js';

export interface OptimizeOptions {
  /** -O level (default 2): 0 none, 1 freeze and cleanups, 2 everything (BN folding, fusion, memory plan). */
  readonly level?: 0 | 1 | 2;
  /** Run exactly these passes (compiler PASSES names) instead of the level's list. */
  readonly passes?: readonly string[];
  /** Pipeline debugging: IR text after the named passes (printed with console.log). */
  readonly printAfter?: readonly string[];
  /** Run the IR verifier after every pass. */
  readonly verifyEach?: boolean;
  /** Run after every pass on these inputs against the source graph; names the first pass that diverges. */
  readonly checkEach?: { readonly inputs: readonly Tensor[]; readonly rtol?: number; readonly atol?: number };
}

/** What can be optimized: a module with a graph (jit.trace's TracedModule, jit.script's ScriptModule once compiled). */
export interface CompiledModule {
  readonly graph: Graph;
  forward(...inputs: Tensor[]): unknown;
  readonly warnings?: readonly tracer.TraceWarning[];
  /** The JavaScript functions the graph's host_call nodes (@jit.ignore methods) call. */
  hostFunctions?(graph: Graph): Record<string, HostFunction>;
}

/** A module whose graph the compiler optimized; `timings` says what each pass took. */
export class OptimizedModule extends TracedModule {
  constructor(graph: Graph, source: CompiledModule, readonly timings: readonly PassRecord[]) {
    super(graph, source.warnings ?? [], outputSpecOf(source), (g) => source.hostFunctions?.(g) ?? {});
  }
}

/**
 * The forward's output structure (tensor, array, object), read off one run of the source
 * module on zeros of its input types (symbolic dims as 1).
 */
function outputSpecOf(m: CompiledModule): tracer.OutputSpec {
  const inputs = m.graph.inputs.filter((i) => i.kind === 'input').map((i) => {
    const t = i.value.type;
    if (t.kind !== 'tensor') throw new Error(`optimizeForInference: input '${i.name}' is not a tensor; only traced tensor inputs are supported`);
    const shape = t.shape.map((d) => (typeof d === 'number' ? d : 1));
    return zeros(shape, { dtype: t.dtype });
  });
  return tracer.flattenOutput(m.forward(...inputs)).spec;
}

function optimize(m: CompiledModule, opts: PipelineOptions): OptimizedModule {
  // A training-mode graph updates buffers (BatchNorm statistics): it is state, not an inference graph.
  const updates = bufferUpdates(m.graph);
  if (updates.length) {
    throw new Error(`jit.freeze/optimizeForInference: graph @${m.graph.name} updates buffers (${updates.map((u) => `'${u.param}'`).join(', ')}: running statistics of a layer in training mode); ` +
      'call model.eval() before tracing or scripting, then optimize');
  }
  const r = runPipeline(m.graph, opts);
  return new OptimizedModule(r.graph, m, r.timings);
}

/**
 * Freezes a traced module: parameters become constants, `training` is folded to false and the
 * -O1 cleanups run (dropout removal, constant folding, canonicalization, CSE, DCE).
 *
 * @example
 * ```ts
 * const frozen = jit.freeze(jit.trace(model.eval(), [x]));
 * frozen.forward(x); // same values, no params left in frozen.graph.inputs
 * ```
 */
export function freeze(m: CompiledModule): OptimizedModule {
  return optimize(m, { level: 1 });
}

/**
 * Optimizes a traced module for inference (default -O2: freeze, cleanups, conv/linear-BN
 * folding, per-channel affine folding, epilogue and elementwise fusion, memory planning).
 *
 * @example
 * ```ts
 * const fast = jit.optimizeForInference(jit.trace(model.eval(), [x], { dynamicAxes: { 0: { 0: 'N' } } }));
 * fast.forward(x);            // matches model.forward(x)
 * await fast.save('model.tsgraph'); // runs in @kiln/runtime alone
 * ```
 */
export function optimizeForInference(m: CompiledModule, opts: OptimizeOptions = {}): OptimizedModule {
  const check = opts.checkEach;
  return optimize(m, {
    level: opts.level ?? 2,
    passes: opts.passes,
    printAfter: opts.printAfter,
    print: (t) => console.log(t),
    verifyEach: opts.verifyEach,
    checkEach: check ? { inputs: check.inputs, rtol: check.rtol, atol: check.atol } : undefined,
  });
}
