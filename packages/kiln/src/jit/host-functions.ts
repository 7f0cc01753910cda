// The JavaScript functions behind a scripted graph's `host_call` nodes (@jit.ignore methods).
// Invariant: a host_call's name is `Class.method` for a method of the scripted module, or
// `path:Class.method` for one of its submodule at `path`, so the module resolves every name
// itself. (A trace that inlines a scripted submodule keeps the functions it was called with,
// under names prefixed with the call's scope: core's trace/lower.ts scopedHostName.)

import { nn, Tensor } from '@kiln/core';
import { walkNodes, type Graph } from '@kiln/ir-spec';
import type { HostFunction, HostValue } from '@kiln/runtime';

function hostValue(r: unknown): unknown {
  if (r instanceof Tensor) return { data: r.data.slice(0, r.numel()), shape: [...r.shape], dtype: r.dtype } satisfies HostValue;
  if (Array.isArray(r)) return r.map(hostValue);
  return r;
}

/**
 * The host functions of `graph`'s host_call nodes, bound to `root`'s (sub)modules, with runtime
 * tensors converted to kiln Tensors and back.
 *
 * @example
 * createModel(graph, { hostFunctions: hostFunctionsFor(model, graph) });
 */
export function hostFunctionsFor(root: nn.Module, graph: Graph): Record<string, HostFunction> {
  const fns: Record<string, HostFunction> = {};
  for (const node of walkNodes(graph.body)) {
    if (node.op !== 'host_call') continue;
    const name = String(node.attrs.name);
    const colon = name.lastIndexOf(':');
    const mod = colon < 0 ? root : root.getSubmodule(name.slice(0, colon));
    const method = name.slice(name.lastIndexOf('.') + 1);
    fns[name] = (...args) => {
      const ts = args.map((a) => (typeof a === 'object' ? new Tensor({ data: a.data, version: 0 }, [...a.shape], a.dtype) : a));
      return hostValue(Reflect.apply(Reflect.get(mod, method) as Function, mod, ts));
    };
  }
  return fns;
}
