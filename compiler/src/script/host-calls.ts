// Calls of methods that stay JavaScript. A `@jit.ignore` method becomes a `host_call` node: the
// compiled graph calls back into the instance's method at run time. A `@jit.unused` method
// becomes a `raise` node: reaching it fails the run, and the graph still saves. Both are typed
// by the checker when it says the method returns void, else by running the method once
// eagerly on example inputs (`ScriptHost.probeMethod`, at the example sizes and at every
// symbolic size plus one, so sizes that follow a symbolic dim stay symbolic). Invariant: the
// node's result types are exactly what the call site is lowered with.

import type { Node as TsNode } from 'ts-morph';
import { dimMul, parseDim, tensorType, typeToString, type Dim, type IRType, type Value } from '@kiln/ir-spec';
import type { Frame, ScriptContext } from './context.js';
import type { ProbeResult, ScriptableModule, TraceArg, TraceInput } from './host.js';
import { describe, stat, type SValue } from './values.js';

/** The host function name of a method: `Net.debugHook` at the root, `blocks.1:Block.debugHook` below it. */
export function hostFunctionName(mod: ScriptableModule, path: string, method: string): string {
  return `${path ? `${path}:` : ''}${mod.className}.${method}`;
}

/** `mod.method(args)` for a method marked @jit.ignore (host_call) or @jit.unused (raise). */
export function callMarked(ctx: ScriptContext, f: Frame, mod: ScriptableModule, path: string, method: string, mark: 'ignore' | 'unused',
  args: readonly SValue[], at: TsNode, declaredVoid = false): SValue {
  const what = `${mod.className}.${method} (marked @jit.${mark})`;
  const inputs: Value[] = [];
  const tensors: Value[] = [];
  const probeArgs: TraceArg[] = args.map((a, i) => {
    if (a.k === 'tensor') {
      inputs.push(a.v);
      let k = tensors.indexOf(a.v);
      if (k < 0) { tensors.push(a.v); k = tensors.length - 1; }
      return { kind: 'tensor', index: k };
    }
    if (a.k === 'scalar') {
      inputs.push(a.v);
      const dt = a.v.type.kind === 'scalar' ? a.v.type.dtype : 'float32';
      // The probe needs some value: a size stands for its example size, other numbers for 1.
      if (a.dim !== undefined) return { kind: 'static', value: ctx.exampleSize(a.dim) };
      return { kind: 'static', value: dt === 'bool' ? true : 1 };
    }
    if (a.k === 'static' && (typeof a.value === 'number' || typeof a.value === 'boolean')) {
      inputs.push(ctx.scalar(a.value));
      return { kind: 'static', value: a.value };
    }
    throw f.src.error(at, `argument ${i} of ${what} is ${describe(a)}; a method that stays JavaScript takes tensors, numbers and booleans from compiled code`);
  });
  const { inputs: examples, renames } = ctx.traceInputs(tensors);
  let probe: ProbeResult = { kind: 'none' };
  try {
    if (!declaredVoid) probe = ctx.host.probeMethod(mod, method, examples, probeArgs);
  } catch (e) {
    throw f.src.error(at, `${what} stays JavaScript, and jit.script runs it once on example inputs to learn the types it returns; that run failed: ${(e as Error).message}. ` +
      (mark === 'unused' ? 'Make the method run on any inputs of these shapes, or remove the call' : 'Make the method run on any inputs of these shapes'));
  }
  const types: IRType[] = [];
  const shapeOf = (r: Extract<ProbeResult, { kind: 'tensor' }>): Dim[] => r.shape.map((d, k) => {
    const b = r.bumped[k];
    if (b === d) return d;
    const dim = followedDim(examples, renames, d, b);
    if (dim === undefined) {
      throw f.src.error(at, `${what} returns a tensor whose dim ${k} is ${d} at the example sizes and ${b} when they grow by one, which is not a multiple of one input dim; ` +
        'jit.script cannot type this call. Return tensors whose sizes are fixed or follow one input dim');
    }
    return dim;
  });
  const collect = (r: ProbeResult): void => {
    switch (r.kind) {
      case 'tensor': types.push(tensorType(r.dtype, shapeOf(r))); return;
      case 'number': types.push({ kind: 'scalar', dtype: 'float32' }); return;
      case 'boolean': types.push({ kind: 'scalar', dtype: 'bool' }); return;
      case 'list': r.items.forEach(collect); return;
      case 'none': return;
    }
  };
  collect(probe);
  const typeText = types.map(typeToString);
  let outs: Value[];
  if (mark === 'ignore') {
    outs = ctx.b.op('host_call', inputs, { name: hostFunctionName(mod, path, method), types: typeText });
  } else {
    const loc = ctx.b.meta.loc ? ` (called at ${ctx.b.meta.loc})` : '';
    outs = ctx.b.op('raise', [], {
      message: `${mod.className}.${method}${path ? ` of ${path}` : ''} is marked @jit.unused and was reached at run time${loc}; remove @jit.unused so it is compiled, or keep this path from running`,
      types: typeText,
    });
  }
  let k = 0;
  const build = (r: ProbeResult): SValue => {
    switch (r.kind) {
      case 'tensor': return { k: 'tensor', v: outs[k++] };
      case 'number': case 'boolean': return { k: 'scalar', v: outs[k++] };
      case 'list': return { k: 'list', items: r.items.map(build) };
      case 'none': return stat(undefined);
    }
  };
  return build(probe);
}

/** The dim that is `base` at the example sizes and `bumped` with every symbol one larger: `c·S` for one symbol S. */
function followedDim(examples: readonly TraceInput[], renames: ReadonlyMap<string, string>, base: number, bumped: number): Dim | undefined {
  const c = bumped - base;
  if (c <= 0) return undefined;
  for (const inp of examples) {
    for (const [k, sym] of Object.entries(inp.axes)) {
      if (inp.shape[Number(k)] * c !== base) continue;
      const full = renames.get(sym) ?? sym;
      // A compound dim (N*2) grows by its coefficient: only a plain symbol is safe to scale.
      if (full !== sym) continue;
      return c === 1 ? parseDim(sym) : dimMul(parseDim(sym), c);
    }
  }
  return undefined;
}
