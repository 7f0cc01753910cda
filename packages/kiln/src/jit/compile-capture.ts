// Capturing one graph for jit.compile: the scripter when it can compile the code (its reads
// become the guards), the tracer otherwise (then every setting of the module is guarded, since a
// trace may depend on any of them). The module's parameters and buffers become ordinary graph
// inputs read from the live module on every call, never frozen copies. Invariant: `sources`
// lists, in the order of the graph's `input` inputs, where each comes from (an argument of the
// call or a tensor field of a submodule), and `rebuild` turns the user outputs into forward's result.

import { nn, Tensor, trace as tracer } from '@kiln/core';
import { scriptFunction, scriptModule, type CallResult, type ScriptInput } from '@kiln/compiler';
import { BUFFER_UPDATES_KEY, bufferUpdates, Graph, type Dim } from '@kiln/ir-spec';
import type { HostFunction } from '@kiln/runtime';
import { GuardSet, guardsForReads, valueGuard, type Guard } from './guards.js';
import { hostFunctionsFor } from './host-functions.js';
import { Adapters, createScriptHost, moduleOfAdapter } from './script-host.js';

/** Where a graph input comes from on each call. */
export type InputSource =
  | { readonly kind: 'arg'; readonly index: number }
  | { readonly kind: 'tensor'; readonly name: string; readonly owner: nn.Module; readonly field: string; readonly tensor: Tensor };

export interface Capture {
  readonly via: 'script' | 'trace';
  /** Params turned into inputs; no buffer-update metadata (`state` says what to write back). */
  readonly graph: Graph;
  readonly guards: GuardSet;
  /** By graph input name. */
  readonly sources: ReadonlyMap<string, InputSource>;
  /** Graph outputs that are forward's result (the first ones), then the buffer updates. */
  readonly userOutputs: number;
  readonly state: readonly { readonly output: string; readonly param: string }[];
  readonly hostFunctions: Record<string, HostFunction>;
  rebuild(outs: readonly Tensor[]): unknown;
}

export type Target = { kind: 'module'; module: nn.Module } | { kind: 'function'; fn: Function };

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

function finish(via: Capture['via'], g: Graph, target: Target, argSources: InputSource[], guards: GuardSet, hostFunctions: Record<string, HostFunction>, rebuild: Capture['rebuild']): Capture {
  const state = bufferUpdates(g);
  const sources = new Map<string, InputSource>();
  let k = 0;
  for (const i of g.inputs) {
    if (i.kind === 'input') {
      const s = argSources[k++];
      if (!s) throw new Error(`jit.compile: graph @${g.name} has more inputs than the call has tensor arguments`);
      sources.set(i.name, s);
      continue;
    }
    sources.set(i.name, tensorSource(target, i.name));
  }
  const params = [...sources.values()].flatMap((s) => (s.kind === 'tensor' ? [s] : []));
  const identity: Guard = {
    attribute: 'the parameters and buffers the graph reads',
    check() {
      for (const p of params) {
        if (Reflect.get(p.owner, p.field) !== p.tensor) return { attribute: `this.${p.name}`, was: 'the tensor the graph was compiled with', now: 'another tensor (replaced)' };
      }
      return undefined;
    },
  };
  const flags = valueGuard('requiresGrad of the parameters', () => params.map((p) => p.tensor.requiresGrad));
  const metadata = Object.fromEntries(Object.entries(g.metadata).filter(([key]) => key !== BUFFER_UPDATES_KEY));
  const inputs = g.inputs.map((i) => (i.kind === 'param' ? { ...i, kind: 'input' as const } : i));
  const tensors = new Map([...g.tensors].filter(([name]) => !g.inputs.some((i) => i.kind === 'param' && i.name === name)));
  const graph = new Graph(g.name, inputs, g.body, g.outputs, tensors, metadata);
  const stateNames = new Set(state.map((s) => s.output));
  const userOutputs = g.outputs.filter((o) => !stateNames.has(o.name)).length;
  return { via, graph, guards: guards.and(new GuardSet([identity, flags])), sources, userOutputs, state, hostFunctions, rebuild };
}

/** A graph param: a tensor field of the module (`features.0.weight`), read live on every call. */
function tensorSource(target: Target, name: string): InputSource {
  if (target.kind !== 'module') throw new Error(`jit.compile: the function's graph reads tensor '${name}' from outside its arguments; pass it as an argument`);
  const dot = name.lastIndexOf('.');
  const owner = target.module.getSubmodule(dot < 0 ? '' : name.slice(0, dot));
  const field = name.slice(dot + 1);
  const tensor = Reflect.get(owner, field);
  if (!(tensor instanceof Tensor)) throw new Error(`jit.compile: graph param '${name}' is not a tensor field of the module (${owner.constructor.name}.${field})`);
  return { kind: 'tensor', name, owner, field, tensor };
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
