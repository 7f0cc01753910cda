// What a captured graph is for jit.compile and how its inputs are found on each call (shared by
// the scripter and tracer captures of compile-capture.ts and by jit.trace's trainable path):
// params turned into inputs read from the live module, buffer updates split off, identity and
// requiresGrad guards added. Invariant: `sources` lists, in the order of the graph's inputs, where
// each comes from (an argument of the call or a tensor field of a submodule), and `rebuild` turns
// the user outputs into forward's result.

import { nn, Tensor } from '@kiln/core';
import { BUFFER_UPDATES_KEY, bufferUpdates, Graph } from '@kiln/ir-spec';
import type { HostFunction } from '@kiln/runtime';
import { GuardSet, valueGuard, type Guard } from './guards.js';

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

export function finish(via: Capture['via'], g: Graph, target: Target, argSources: InputSource[], guards: GuardSet, hostFunctions: Record<string, HostFunction>, rebuild: Capture['rebuild']): Capture {
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

