// The backward engine: walks recorded Nodes from the roots in dependency order, runs each op's
// gradient rule (from its ir-spec entry) through the dispatch, reduces broadcast gradients to
// input shapes, and delivers gradients to leaves. Invariant: a node runs only after every
// gradient flowing into it has been summed; with `createGraph` the rules are recorded too.
// Without it, the tensors backward makes are its own (a lifetime scope): a rule's temporaries are
// disposed when the rule returns, and a gradient once nothing holds it any more (no pending
// buffer, no capture) — so on the GPU their buffers go back to the pool during backward, not at
// the next garbage collection. Gradients handed out (`.grad`, autograd.grad's results, tensors
// seen by hooks) are never disposed here.

import { withoutAutocast } from '../amp/autocast.js';
import { GradBuilder, type OpCaller } from '@kiln/ir-spec';
import { Tensor } from '../tensor.js';
import { dispatch } from '../dispatch.js';
import { enableGrad, noGrad } from './grad-mode.js';
import type { Node } from './node.js';
import { traceHooks } from '../trace/hooks.js';
import { scalarTensorGpu, type DeviceName } from '../device.js';
import { closeScope, disposeTensor, keep, openScope, untracked, type Scope } from '../lifetime.js';

/** The device of the node whose rule runs: a rule's constants live there, so backward stays on the forward's device. */
let ruleDevice: DeviceName = 'cpu';
const caller: OpCaller<Tensor> = {
  call: (op, inputs, attrs) => dispatch(op, inputs, attrs),
  scalar: (v, dtype) => (ruleDevice === 'webgpu' ? scalarTensorGpu(v, dtype) : Tensor._scalar(v, dtype)),
  typeOf: (t) => ({ dtype: t.dtype, shape: t.shape }),
};
const builder = new GradBuilder<Tensor>(caller);

export interface BackwardOptions {
  retainGraph?: boolean;
  createGraph?: boolean;
}

/** Where a requested gradient is captured instead of accumulated into `.grad`. */
interface Capture {
  leaves: Map<Tensor, Tensor | null>;
  nodes: Map<Node, Map<number, Tensor>>;
  results: Map<string, Tensor | null>;
  /** The captured tensors are a boundary: no hooks run on them and nothing past them runs
   * (checkpoint's recomputation hands their gradients to the outer backward instead). */
  stop?: boolean;
}

function accumulate(a: Tensor | null | undefined, b: Tensor): Tensor {
  return a ? a.add(b) : b;
}

/**
 * Runs backward from `roots` seeded with `seeds`. Without `capture`, leaf gradients accumulate
 * into `.grad`; with it, gradients of the captured tensors are returned and `.grad` is untouched.
 */
export function runBackward(roots: Tensor[], seeds: Tensor[], opts: BackwardOptions, capture?: Capture): void {
  // Accumulating into .grad while a trace records: the trace refuses (it cannot keep the side effect).
  if (!capture) traceHooks.listener?.onBackward?.();
  const createGraph = opts.createGraph ?? false;
  const retain = opts.retainGraph ?? createGraph;
  // Backward ops run in the dtypes of their forward ops: autocast is off (as on PyTorch's backward thread).
  if (createGraph) {
    enableGrad(() => withoutAutocast(() => execute(roots, seeds, true, retain, null, capture)));
    return;
  }
  const own = openScope();
  try {
    noGrad(() => withoutAutocast(() => execute(roots, seeds, false, retain, own, capture)));
  } finally {
    // What backward made and nobody holds goes now; autograd.grad's results move to the caller's scope.
    closeScope(own, capture ? [...capture.results.values()].filter((t): t is Tensor => t !== null) : []);
  }
}

/** Counts who holds each gradient backward made (pending buffers, captures); frees the unheld. */
class Holds {
  private readonly n = new Map<Tensor, number>();
  private readonly maybeDead = new Set<Tensor>();
  constructor(private readonly own: Scope | null) {}
  hold(t: Tensor): void { this.n.set(t, (this.n.get(t) ?? 0) + 1); }
  drop(t: Tensor | null | undefined): void {
    if (!t) return;
    const c = (this.n.get(t) ?? 0) - 1;
    if (c > 0) this.n.set(t, c); else this.n.delete(t);
    this.maybeDead.add(t);
  }
  /** A fresh result that may end up held by nobody. */
  watch(t: Tensor | null | undefined): void { if (t) this.maybeDead.add(t); }
  /** Disposes the watched tensors that backward made and nothing holds. */
  sweep(): void {
    for (const t of this.maybeDead) if (this.own && t._scope === this.own && !this.n.has(t)) disposeTensor(t);
    this.maybeDead.clear();
  }
}

/** Runs a user hook on `g`: `g` may be kept by the hook, and what the hook makes is the user's. */
function runHook(hook: (g: Tensor) => Tensor | void, g: Tensor): Tensor {
  const r = untracked(() => hook(keep(g)));
  return r ? keep(r) : g;
}

function execute(roots: Tensor[], seeds: Tensor[], createGraph: boolean, retain: boolean, own: Scope | null, capture?: Capture): void {
  const holds = new Holds(own);
  // 1. Count, for every reachable node, how many edges point at it.
  const deps = new Map<Node, number>();
  const stack: Node[] = [];
  for (const r of roots) if (r.gradFn && !deps.has(r.gradFn)) { deps.set(r.gradFn, 0); stack.push(r.gradFn); }
  while (stack.length) {
    const n = stack.pop()!;
    if (capture?.stop && capture.nodes.has(n)) continue;
    for (const e of n.edges) {
      if (e && 'node' in e) {
        const c = deps.get(e.node);
        if (c === undefined) { deps.set(e.node, 1); stack.push(e.node); } else deps.set(e.node, c + 1);
      }
    }
  }
  // 2. Seed the roots.
  const buffers = new Map<Node, (Tensor | null)[]>();
  const addTo = (node: Node, index: number, g: Tensor) => {
    let buf = buffers.get(node);
    if (!buf) { buf = new Array(node.outputTypes.length).fill(null); buffers.set(node, buf); }
    const prev = buf[index];
    buf[index] = accumulate(prev, g);
    holds.hold(buf[index]!);
    holds.drop(prev);
    holds.watch(g);
  };
  const capResult = (k: string, g: Tensor) => {
    const prev = capture!.results.get(k);
    const sum = accumulate(prev, g);
    capture!.results.set(k, sum);
    holds.hold(sum);
    holds.drop(prev);
  };
  roots.forEach((r, i) => {
    if (r.gradFn) addTo(r.gradFn, r.outputIndex, seeds[i]);
    else if (r.requiresGrad) deliverToLeaf(r, seeds[i], createGraph, capture);
    else throw new Error('element 0 of tensors does not require grad and does not have a gradFn: nothing to differentiate. Did you forget requiresGrad: true, or run it inside noGrad()?');
  });
  // 3. Execute ready nodes; among ready nodes, the most recently created first (as PyTorch).
  const ready = new NodeHeap();
  for (const [n, c] of deps) if (c === 0) ready.push(n);
  while (ready.size) {
    const node = ready.pop();
    const consumed = buffers.get(node) ?? [];
    const grads = buffers.get(node)?.slice() ?? new Array(node.outputTypes.length).fill(null);
    buffers.delete(node);
    const stop = !!capture?.stop && capture.nodes.has(node);
    for (let i = 0; i < grads.length; i++) {
      for (const hook of stop ? [] : node.outputHooks[i] ?? []) {
        if (grads[i]) grads[i] = runHook(hook, grads[i]!);
      }
      const cap = capture?.nodes.get(node)?.get(i);
      if (cap && grads[i]) capResult(key(cap), grads[i]!);
      else if (cap && !capture!.results.has(key(cap))) capture!.results.set(key(cap), null);
    }
    if (!stop) {
      const inputGrads = grads.some((g) => g) ? (own ? ruleScoped(node, grads) : applyRule(node, grads)) : node.edges.map(() => null);
      if (!retain) node.release();
      node.edges.forEach((e, i) => {
        if (!e) return;
        const g = inputGrads[i];
        if ('node' in e) {
          if (g) addTo(e.node, e.index, g);
          const c = deps.get(e.node)! - 1;
          deps.set(e.node, c);
          if (c === 0) ready.push(e.node);
        } else if (g) {
          deliverToLeaf(e.leaf, g, createGraph, capture, capResult);
          holds.watch(g);
        }
      });
    }
    // This node's gradients were consumed: free those nothing else holds now.
    for (const g of consumed) holds.drop(g);
    holds.sweep();
  }
}

/** applyRule with its temporaries disposed when it returns (only the input gradients move on). */
function ruleScoped(node: Node, grads: (Tensor | null)[]): (Tensor | null)[] {
  if (!node.edges.length) return [];
  const s = openScope();
  let out: (Tensor | null)[] = [];
  try {
    out = applyRule(node, grads);
  } finally {
    closeScope(s, out.filter((g): g is Tensor => g !== null));
  }
  return out;
}

const keyIds = new WeakMap<Tensor, string>();
let nextKey = 0;
/** A stable identity for a captured tensor. */
export function key(t: Tensor): string {
  let k = keyIds.get(t);
  if (!k) { k = `t${nextKey++}`; keyIds.set(t, k); }
  return k;
}

function applyRule(node: Node, grads: (Tensor | null)[]): (Tensor | null)[] {
  const { inputs, outputs } = node.unpack();
  const needs = node.edges.map((e) => e !== null);
  const outer = ruleDevice;
  ruleDevice = grads.some((g) => g?.device === 'webgpu') ? 'webgpu' : 'cpu';
  let out: readonly (Tensor | null)[];
  try {
    out = node.backwardFn ? node.backwardFn(grads, inputs) : node.def.grad!.rule(builder, {
      attrs: node.attrs,
      inputs, outputs,
      inputTypes: node.inputTypes,
      outputTypes: node.outputTypes,
      gradOutputs: grads,
      needsInputGrad: needs,
    });
  } finally {
    ruleDevice = outer;
  }
  return out.map((g, i) => {
    const t = node.inputTypes[i];
    if (!g || !needs[i] || !t) return null;
    return builder.sumToShape(g, t.shape);
  });
}

function deliverToLeaf(leaf: Tensor, g: Tensor, createGraph: boolean, capture?: Capture, capResult?: (k: string, g: Tensor) => void): void {
  if (!capture?.stop) for (const hook of leaf._hooks) g = runHook(hook, g);
  if (capture) {
    if (!capture.leaves.has(leaf)) return;
    if (capResult) capResult(key(leaf), g);
    else capture.results.set(key(leaf), accumulate(capture.results.get(key(leaf)), g));
    return;
  }
  leaf._accumulateGrad(g, createGraph);
}

/** Gradients of `outputs` with respect to `inputs` (PyTorch's torch.autograd.grad). */
export function grad(
  outputs: Tensor | Tensor[],
  inputs: Tensor | Tensor[],
  opts: BackwardOptions & {
    gradOutputs?: (Tensor | null)[] | Tensor; allowUnused?: boolean;
    /** @internal stop at `inputs`: no hooks on them, nothing past them runs (checkpoint). */
    stopAtInputs?: boolean;
  } = {},
): (Tensor | null)[] {
  const outs = Array.isArray(outputs) ? outputs : [outputs];
  const ins = Array.isArray(inputs) ? inputs : [inputs];
  const gos = opts.gradOutputs === undefined ? [] : Array.isArray(opts.gradOutputs) ? opts.gradOutputs : [opts.gradOutputs];
  const seeds = outs.map((o, i) => seedFor(o, gos[i] ?? null, 'autograd.grad'));
  const capture: Capture = { leaves: new Map(), nodes: new Map(), results: new Map(), stop: opts.stopAtInputs };
  for (const t of ins) {
    if (!t.requiresGrad) throw new Error(`autograd.grad: input of shape [${t.shape.join(',')}] does not require grad; call requiresGrad_() on it first`);
    if (t.gradFn) {
      let m = capture.nodes.get(t.gradFn);
      if (!m) { m = new Map(); capture.nodes.set(t.gradFn, m); }
      m.set(t.outputIndex, t);
    } else capture.leaves.set(t, null);
  }
  runBackward(outs, seeds, opts, capture);
  return ins.map((t, i) => {
    const g = capture.results.get(key(t)) ?? null;
    if (!g && !opts.allowUnused) {
      throw new Error(`autograd.grad: input ${i} (shape [${t.shape.join(',')}]) was not used to compute the outputs; pass { allowUnused: true } to get null for it`);
    }
    return g;
  });
}

/** The implicit seed: ones for a scalar output; anything else needs an explicit gradient. */
export function seedFor(out: Tensor, g: Tensor | null, where: string): Tensor {
  if (g) {
    if (g.shape.length !== out.shape.length || g.shape.some((d, i) => d !== out.shape[i])) {
      throw new Error(`${where}: gradient has shape [${g.shape.join(',')}] but the output has shape [${out.shape.join(',')}]`);
    }
    return g;
  }
  if (out.numel() !== 1) {
    throw new Error(`${where}: grad can be implicitly created only for scalar outputs, but the output has shape [${out.shape.join(',')}]; pass a gradient of that shape (e.g. backward({ gradient: ones(shape) })) or reduce the output first (sum(), mean())`);
  }
  // On the GPU: a view of the cached constant 1, so backward() allocates no buffer for its seed.
  return out.device === 'webgpu' ? scalarTensorGpu(1, out.dtype).reshape(out.shape) : Tensor._scalar(1, out.dtype).reshape(out.shape);
}

/** Max-heap of nodes by creation order: the latest-recorded ready node runs first. */
class NodeHeap {
  private items: Node[] = [];
  get size(): number { return this.items.length; }
  push(n: Node): void {
    const a = this.items;
    a.push(n);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (a[p].seq >= a[i].seq) break;
      [a[p], a[i]] = [a[i], a[p]];
      i = p;
    }
  }
  pop(): Node {
    const a = this.items, top = a[0], last = a.pop()!;
    if (a.length) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < a.length && a[l].seq > a[m].seq) m = l;
        if (r < a.length && a[r].seq > a[m].seq) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i], a[m]];
        i = m;
      }
    }
    return top;
  }
}
