// Capturing one graph for jit.compile: the scripter when it can compile the code (its reads
// become the guards), the tracer otherwise (then every setting of the module is guarded, since a
// trace may depend on any of them). The module's parameters and buffers become ordinary graph
// inputs read from the live module on every call, never frozen copies. Invariant: `sources`
// lists, in the order of the graph's `input` inputs, where each comes from (an argument of the
// call or a tensor field of a submodule), and `rebuild` turns the user outputs into forward's result.

import { nn, Tensor, trace as tracer } from '@kiln/core';
import { scriptFunction, scriptModule, type CallResult, type ScriptInput } from '@kiln/compiler';
import type { Dim } from '@kiln/ir-spec';
import type { HostFunction } from '@kiln/runtime';
import { GuardSet, guardsForReads, valueGuard, type Guard } from './guards.js';
import { finish, type Capture, type InputSource, type Target } from './compile-sources.js';
import { hostFunctionsFor } from './host-functions.js';
import { Adapters, createScriptHost, moduleOfAdapter } from './script-host.js';

export type { Capture, InputSource, Target } from './compile-sources.js';


/** `dynamic` holds `arg:dim` for every symbolic dim. */
export function captureWithScript(target: Target, args: readonly unknown[], dynamic: ReadonlySet<string>): Capture {
  const kinds = args.map((a, i) => scriptKind(a, i, dynamic));
  const adapters = new Adapters(undefined);
  const globals = new Map<string, number | string | boolean>();
  const host = { ...createScriptHost(adapters), readGlobal: (name: string) => readGlobal(name, globals) };
  const scripted = target.kind === 'module'
    ? scriptModule(host, adapters.of(target.module), kinds, 'forward', {})
    : scriptFunction(host, Function.prototype.toString.call(target.fn), target.fn.name, kinds, undefined, {});
  const guards = guardsForReads(scripted.reads, moduleOfAdapter).and(new GuardSet([...globals].map(([name, value]) => globalGuard(name, value))));
  const argSources = args.map((_, index): InputSource => ({ kind: 'arg', index }));
  const host2 = target.kind === 'module' ? hostFunctionsFor(target.module, scripted.graph) : {};
  return finish('script', scripted.graph, target, argSources, guards, host2, (outs) => rebuildScripted(scripted.result, outs));
}

export function captureWithTrace(target: Target, args: readonly unknown[], dynamic: ReadonlySet<string>): Capture {
  const dynamicAxes: Record<number, Record<number, string>> = {};
  for (const k of dynamic) {
    const [a, d] = k.split(':').map(Number);
    (dynamicAxes[a] ??= {})[d] = `s${a}_${d}`;
  }
  const model: tracer.TraceableModule = target.kind === 'module' ? target.module : { forward: (...xs: unknown[]) => target.fn(...xs) } as tracer.TraceableModule;
  const r = tracer.traceModule(model, [...args], { dynamicAxes });
  // A warning means the trace baked in something that may differ on the next call (a branch on a value): not a graph to reuse.
  if (r.warnings.length) throw new Error(`the trace is not reusable: ${r.warnings[0].message}`);
  const constant = new Set(r.constantArgs.map((c) => c.index));
  const argSources = args.flatMap((a, index): InputSource[] => (constant.has(index) ? [] : [{ kind: 'arg', index }]));
  // A trace bakes in whatever the module's code read: guard all its settings and the constant arguments' kinds are in the cache key.
  const guards: Guard[] = r.guards.flatMap(({ guards: g }) => (g instanceof GuardSet ? [...g.guards] : []));
  if (target.kind === 'module') guards.push(valueGuard('the settings of the traced module (training flags, attributes, submodules)', () => settingsOf(target.module)));
  return finish('trace', r.graph, target, argSources, new GuardSet(guards), { ...r.hostFunctions } as Record<string, HostFunction>,
    (outs) => tracer.unflattenOutput(r.outputSpec, [...outs]));
}

/**
 * A global (a property of globalThis) the scripted code reads, recorded in `seen`: numbers,
 * strings and booleans only (baked into the graph and guarded, as Dynamo guards Python globals).
 */
function readGlobal(name: string, seen: Map<string, number | string | boolean>): number | string | boolean | undefined {
  if (!Object.prototype.hasOwnProperty.call(globalThis, name)) return undefined;
  const v: unknown = Reflect.get(globalThis, name);
  if (typeof v !== 'number' && typeof v !== 'string' && typeof v !== 'boolean') return undefined;
  seen.set(name, v);
  return v;
}

/** Holds while `globalThis[name]` still has the value the graph baked in. */
function globalGuard(name: string, value: number | string | boolean): Guard {
  const attribute = `global ${name}`;
  return {
    attribute,
    check() {
      const now: unknown = Reflect.get(globalThis, name);
      return Object.is(now, value) ? undefined : { attribute, was: JSON.stringify(value), now: typeof now === 'number' || typeof now === 'string' || typeof now === 'boolean' ? JSON.stringify(now) : String(now) };
    },
  };
}

function scriptKind(a: unknown, i: number, dynamic: ReadonlySet<string>): ScriptInput {
  if (a instanceof Tensor) return { kind: 'tensor', dtype: a.dtype, shape: a.shape.map((d, j): Dim => (dynamic.has(`${i}:${j}`) ? `s${i}_${j}` : d)) };
  if (typeof a === 'number') return { kind: 'number', dtype: Number.isInteger(a) ? 'int32' : 'float32' };
  if (typeof a === 'boolean') return { kind: 'boolean' };
  throw new Error(`argument ${i} is ${a === null ? 'null' : typeof a}; the scripter takes tensors, numbers and booleans`);
}

function rebuildScripted(r: CallResult, outs: readonly Tensor[]): unknown {
  if (r.kind === 'tensor') return outs[r.output];
  if (r.kind === 'list') return r.items.map((x) => rebuildScripted(x, outs));
  if (r.kind === 'object') return Object.fromEntries(r.keys.map((k, i) => [k, rebuildScripted(r.items[i], outs)]));
  return r.value;
}

/** Everything a trace of `m` may have read: each module's training flag, non-tensor fields and children. */
function settingsOf(m: nn.Module): unknown[] {
  const out: unknown[] = [];
  const walk = (x: object) => {
    if (x instanceof nn.Module) out.push(x.training);
    for (const [k, v] of Object.entries(x)) {
      if (v instanceof Tensor || typeof v === 'function') continue;
      if (v instanceof nn.Module) { out.push(k, v); walk(v); continue; }
      if (!k.startsWith('_')) out.push(k, v);
    }
  };
  walk(m);
  return out;
}
