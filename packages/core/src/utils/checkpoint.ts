// Activation checkpointing (torch.utils.checkpoint). Invariant: the forward pass runs `fn` under
// noGrad, so the segment keeps nothing but its inputs; its outputs hang off ONE custom node whose
// backward recomputes `fn` with grad on (replaying the same random draws) and backpropagates
// through the recomputed graph. The node's edges are the tensor arguments that require grad plus
// every outside tensor `fn` used that requires grad (parameters, captured activations), found by
// watching the dispatch during the forward run. Their gradients go back through the outer
// backward like those of any op, so hooks, autograd.grad, createGraph and gradient accumulation
// behave exactly as without checkpointing (this is PyTorch's non-reentrant behaviour; the
// reentrant one differs only in what it cannot do).

import { fmtShape, isFloating, type TensorType } from '@kiln/ir-spec';
import { Tensor } from '../tensor.js';
import { withObserver } from '../dispatch.js';
import { enableGrad, isGradEnabled, noGrad } from '../autograd/grad-mode.js';
import { grad } from '../autograd/engine.js';
import { Node, type BackwardFn, type Edge } from '../autograd/node.js';
import { defaultGenerator, type GeneratorState } from '../random.js';

const typeOf = (t: Tensor): TensorType => ({ dtype: t.dtype, shape: t.shape });

/**
 * Runs `fn(...args)` without keeping its intermediate activations; backward recomputes them.
 * Gradients equal those of calling `fn` directly. `fn` must be deterministic apart from the
 * default random generator (whose state is replayed), and must not require grad on tensors it
 * creates itself.
 * @example const h = utils.checkpoint((x) => block.forward(x), x);
 */
export function checkpoint<A extends unknown[]>(fn: (...args: A) => Tensor, ...args: A): Tensor;
export function checkpoint<A extends unknown[]>(fn: (...args: A) => Tensor[], ...args: A): Tensor[];
export function checkpoint<A extends unknown[]>(fn: (...args: A) => Tensor | Tensor[], ...args: A): Tensor | Tensor[] {
  if (!isGradEnabled()) return fn(...args);
  const tensorArgs = [...new Set(args.filter((a): a is Tensor => a instanceof Tensor))];
  const outside = new Set<Tensor>();
  const rng = defaultGenerator.getState();
  const watch = {
    onOp(_op: unknown, inputs: readonly (Tensor | null)[]) {
      for (const t of inputs) if (t && t.requiresGrad && !tensorArgs.includes(t)) outside.add(t);
    },
  };
  const result = withObserver(watch, () => noGrad(() => fn(...args)));
  const list = Array.isArray(result) ? result : [result];
  list.forEach((o, i) => {
    if (!(o instanceof Tensor)) throw new Error(`checkpoint: the function must return a Tensor or an array of Tensors; output ${i} is ${typeof o}`);
  });

  // Node inputs: the tensor arguments, then the outside tensors. All are saved: the recomputation
  // needs them, and the version check catches one changed in place before backward (which would
  // otherwise silently recompute from the new value).
  const inputs = [...tensorArgs, ...outside];
  const edges: Edge[] = inputs.map((t) => (!t.requiresGrad ? null : t.gradFn ? { node: t.gradFn, index: t.outputIndex } : { leaf: t }));
  const wrt = inputs.flatMap((_, i) => (edges[i] ? [i] : []));
  if (wrt.length === 0) return result; // nothing to differentiate

  // Outputs are fresh views: an argument returned unchanged must not get this node as history.
  const outs = list.map((o) => o.detach());
  const def = {
    name: 'checkpoint',
    grad: {
      saveInputs: inputs.map((_, i) => i),
      rule: () => { throw new Error('checkpoint: its backward runs through backwardFn'); },
    },
  };
  const node = new Node(def, {}, edges, inputs.map(typeOf), outs.map(typeOf), inputs, outs);
  const slots = args.map((a) => (a instanceof Tensor ? tensorArgs.indexOf(a) : -1));
  const plain = args.map((a) => (a instanceof Tensor ? null : a));
  node.backwardFn = recompute(fn, slots, plain, rng, outs.map((o) => o.shape), wrt);
  outs.forEach((o, i) => { if (isFloating(o.dtype)) o._setGradFn(node, i); });
  return Array.isArray(result) ? outs : outs[0];
}

/**
 * The backward of a checkpoint node. It is built outside checkpoint() so that it keeps no tensor
 * alive: the arguments come back version-checked as `saved` (freed with the node's saved tensors
 * after a backward without retainGraph). The recomputation uses the saved tensors themselves,
 * not copies, so with createGraph the gradients stay connected to them (double backward);
 * `stopAtInputs` keeps the inner backward from running past them into the outer graph.
 */
function recompute<A extends unknown[]>(
  fn: (...args: A) => Tensor | Tensor[], slots: number[], plain: unknown[], rng: GeneratorState,
  outShapes: (readonly number[])[], wrt: number[],
): BackwardFn {
  return (gradOutputs, saved) => {
    // `map` loses the tuple type of A; positions and non-tensor values are those of the call.
    const replay = slots.map((k, i) => (k >= 0 ? saved[k] : plain[i])) as A;
    const now = defaultGenerator.getState();
    defaultGenerator.setState(rng);
    let again: Tensor | Tensor[];
    try {
      again = enableGrad(() => fn(...replay));
    } finally {
      defaultGenerator.setState(now);
    }
    const againList = Array.isArray(again) ? again : [again];
    if (againList.length !== outShapes.length) {
      throw new Error(`checkpoint: the recomputation returned ${againList.length} outputs, the forward run ${outShapes.length}; the function must be deterministic`);
    }
    const roots: Tensor[] = [], seeds: Tensor[] = [];
    againList.forEach((o, i) => {
      const g = gradOutputs[i], want = outShapes[i];
      if (o.shape.length !== want.length || o.shape.some((d, k) => d !== want[k])) {
        throw new Error(`checkpoint: output ${i} has shape ${fmtShape(o.shape)} on recomputation but ${fmtShape(want)} in the forward run; the function must be deterministic`);
      }
      if (g && o.requiresGrad) { roots.push(o); seeds.push(g); }
    });
    const grads: (Tensor | null)[] = saved.map(() => null);
    if (roots.length === 0) return grads;
    const gs = grad(roots, wrt.map((i) => saved[i]!), { gradOutputs: seeds, allowUnused: true, createGraph: isGradEnabled(), stopAtInputs: true });
    wrt.forEach((i, k) => { grads[i] = gs[k]; });
    return grads;
  };
}

/** A layer of checkpointSequential: a module (anything with forward) or a function. */
export type SequentialLayer = ((x: Tensor) => Tensor) | { forward(x: Tensor): Tensor };

/**
 * Runs `layers` in order, checkpointing all but the last of `segments` equal segments (the last
 * one runs normally, as backward needs it right away) — torch.utils.checkpoint.checkpoint_sequential.
 * @example const y = utils.checkpointSequential(model.features, 2, x);
 */
export function checkpointSequential(layers: Iterable<SequentialLayer>, segments: number, input: Tensor): Tensor {
  const list = [...layers];
  if (!Number.isInteger(segments) || segments < 1) throw new Error(`checkpointSequential: segments must be a positive integer, got ${segments}`);
  const call = (l: SequentialLayer, x: Tensor): Tensor => (typeof l === 'function' ? l(x) : l.forward(x));
  const run = (start: number, end: number) => (x: Tensor): Tensor => {
    for (let j = start; j <= end; j++) x = call(list[j], x);
    return x;
  };
  const size = Math.floor(list.length / segments);
  let end = -1;
  for (let start = 0; start < size * (segments - 1); start += size) {
    end = start + size - 1;
    input = checkpoint(run(start, end), input);
  }
  return run(end + 1, list.length - 1)(input);
}
