// Graph autodiff for jit.compile (what AOTAutograd does for torch.compile): from a straight-line
// forward graph, a backward graph built from the op entries' gradient rules (the same rules eager
// autograd runs, through GradBuilder over IR values), and the forward graph extended to output
// exactly what the backward reads. Invariant: the backward graph's inputs are the forward's own
// inputs it needs (same names), the saved forward values (`SAVED_PREFIX` outputs of the new
// forward graph, same names) and one gradient per differentiable forward output (`GRAD_PREFIX`
// + output index); its outputs are `GRAD_PREFIX` + input name for each input that gets a gradient.
// Seeing the whole graph, it differentiates a training-mode batch norm (batch_norm over
// batch_norm_stats of the same x) as one batch_norm_backward node instead of the two ops' rules.
// With `recompute`, a saved value made by a cheap deterministic op (elementwise, a view, a batch
// norm applying given statistics, a literal) from values the backward reads anyway (saved or
// forward inputs, directly or through other such ops) is not saved: the backward graph computes
// it again from them. The saved set then only shrinks, and every value is bit-identical (the
// same ops on the same inputs).

import { GradBuilder, GraphBuilder, Graph, getOp, hasOp, isRandomOp, type GraphInput, type Node, type OpCaller, type TensorType, type Value, type DType } from '@kiln/ir-spec';

export const SAVED_PREFIX = '__kiln_saved.';
export const GRAD_PREFIX = '__kiln_grad.';

/** A forward graph that cannot be differentiated here: the op and why (jit.compile runs it eagerly). */
export class AutodiffUnsupported extends Error {
  /** `where`: the source location of the node that has no gradient, when the graph records one. */
  constructor(message: string, readonly where?: string) {
    super(message);
    this.name = 'AutodiffUnsupported';
  }
}

export interface JointGraphs {
  /** The forward graph with the saved values appended as outputs. */
  readonly forward: Graph;
  readonly backward: Graph;
  /** Names of the forward inputs the backward reads (saved inputs of the autograd node). */
  readonly savedInputs: readonly string[];
  /** Names of the saved forward values, in the forward graph's output order. */
  readonly savedValues: readonly string[];
  /** Indices (among forward.outputs before the saved ones) of outputs that take a gradient. */
  readonly gradOutputs: readonly number[];
  /** Names of the forward inputs the backward outputs a gradient for. */
  readonly gradInputs: readonly string[];
  /** Forward nodes the backward graph runs again instead of reading their saved results (`recompute`). */
  readonly recomputed: number;
}

/** How far back (ops deep) a recomputed value may reach for values the backward has anyway. */
const RECOMPUTE_DEPTH = 4;

/**
 * Differentiates `g` with respect to the inputs named in `wrt` (float tensors). `outputs` are the
 * indices of g's outputs whose gradients flow back (the others, e.g. buffer updates, do not).
 * `recompute`: recompute the cheap saved values in the backward graph instead (see the header).
 */
export function differentiate(g: Graph, wrt: ReadonlySet<string>, outputs: readonly number[], opts: { readonly recompute?: boolean } = {}): JointGraphs {
  const plain = build(g, wrt, outputs, new Set());
  if (!opts.recompute) return plain;
  const saved = new Set(plain.forward.outputs.slice(g.outputs.length).map((o) => o.value));
  const again = recomputable(g, saved);
  return again.size ? build(g, wrt, outputs, again) : plain;
}

/** Ops cheap and deterministic enough to run again in the backward graph. */
function cheap(n: Node): boolean {
  if (n.regions.length || !hasOp(n.op) || isRandomOp(n.op)) return false;
  if (n.op === 'constant' || n.op === 'scalar') return 'value' in n.attrs; // a literal, not a stored tensor
  const def = getOp(n.op);
  return !!def.elementwise || n.op === 'batch_norm' || !!def.view?.(n.attrs);
}

/**
 * The forward values the backward graph can compute again from what it reads anyway: cheap ops
 * (see cheap) whose inputs are forward inputs, saved values that stay saved, or such values
 * themselves, at most RECOMPUTE_DEPTH ops deep. Only values the backward reads, or that lead to
 * them, are returned.
 */
function recomputable(g: Graph, saved: ReadonlySet<Value>): Set<Value> {
  const inputs = new Set(g.inputs.map((i) => i.value));
  const producer = new Map<Value, Node>();
  for (const n of g.body.nodes) for (const o of n.outputs) producer.set(o, n);
  const again = new Set<Value>();
  /** Whether the backward has `v` without saving it anew: a forward input, a kept saved value, or recomputed (added to `again`). */
  const available = (v: Value, depth: number): boolean => {
    if (inputs.has(v) || again.has(v)) return true;
    const n = producer.get(v);
    if (n && depth <= RECOMPUTE_DEPTH && cheap(n) && n.inputs.every((u) => !u || available(u, depth + 1))) {
      again.add(v);
      return true;
    }
    return saved.has(v);
  };
  for (const v of saved) available(v, 0);
  return again;
}

/** differentiate with the forward values in `again` recomputed by the backward graph instead of saved. */
function build(g: Graph, wrt: ReadonlySet<string>, outputs: readonly number[], again: ReadonlySet<Value>): JointGraphs {
  const requires = new Set<Value>();
  for (const i of g.inputs) if (wrt.has(i.name) && isFloat(i.value)) requires.add(i.value);
  const fwdInputs = new Map<Value, GraphInput>(g.inputs.map((i) => [i.value, i]));
  for (const n of g.body.nodes) {
    if (n.regions.length) throw new AutodiffUnsupported(`the graph has a '${n.op}' region (control flow on tensor values or run-time numbers); training through it runs eagerly`, locOf(n));
    if (n.inputs.some((v) => v && requires.has(v))) for (const o of n.outputs) if (isFloat(o)) requires.add(o);
  }

  const b = new GraphBuilder(`${g.name}_backward`);
  const inBackward = new Map<Value, Value>(); // forward value → backward input standing for it
  const savedInputs: string[] = [];
  const saved: { name: string; value: Value }[] = [];
  const own = new Set<Value>(); // values made by the backward builder
  const backInputs = new Set<Value>();
  let recomputed = 0;
  const producerOf = new Map<Value, Node>();
  if (again.size) for (const n of g.body.nodes) for (const o of n.outputs) producerOf.set(o, n);
  const bring = (v: Value): Value => {
    if (own.has(v)) return v;
    let m = inBackward.get(v);
    if (!m && again.has(v)) {
      // Computed again here from what the backward has anyway (its inputs first).
      const n = producerOf.get(v)!;
      const outs = b.op(n.op, n.inputs.map((u) => (u ? bring(u) : null)), n.attrs, n.meta);
      recomputed++;
      n.outputs.forEach((o, i) => { own.add(outs[i]); inBackward.set(o, outs[i]); });
      m = inBackward.get(v)!;
    }
    if (!m) {
      const input = fwdInputs.get(v);
      const name = input ? input.name : `${SAVED_PREFIX}${saved.length}`;
      m = b.input(name, v.type);
      backInputs.add(m);
      if (input) savedInputs.push(name);
      else saved.push({ name, value: v });
      inBackward.set(v, m);
    }
    return m;
  };
  const made = (vs: Value[]) => { for (const v of vs) own.add(v); return vs; };
  const caller: OpCaller<Value> = {
    call: (op, inputs, attrs) => made(b.op(op, inputs.map((v) => (v ? bring(v) : null)), attrs)),
    scalar: (value, dtype: DType) => made([b.literal(value, dtype)])[0],
    typeOf: (v) => tensorOf(v),
  };
  const gb = new GradBuilder<Value>(caller);

  const grads = new Map<Value, Value>();
  const addGrad = (v: Value, gv: Value) => {
    const have = grads.get(v);
    grads.set(v, have ? gb.add(have, gv) : gv);
  };
  const gradOutputs: number[] = [];
  for (const k of outputs) {
    const o = g.outputs[k];
    if (!requires.has(o.value)) continue;
    gradOutputs.push(k);
    const gin = made([b.input(`${GRAD_PREFIX}${k}`, o.value.type)])[0];
    backInputs.add(gin);
    addGrad(o.value, gin);
  }

  const producer = new Map<Value, Node>();
  const uses = new Map<Value, number>();
  for (const n of g.body.nodes) {
    for (const o of n.outputs) producer.set(o, n);
    for (const v of n.inputs) if (v) uses.set(v, (uses.get(v) ?? 0) + 1);
  }
  for (const o of g.outputs) uses.set(o.value, (uses.get(o.value) ?? 0) + 1);
  /** relu whose input is a training-mode batch norm's output read by it alone: the pair's gradient is one node. */
  const reluOfBatchNorm = (n: Node): Node | undefined => {
    const bn = n.op === 'relu' && n.inputs[0] ? producer.get(n.inputs[0]) : undefined;
    return bn && uses.get(n.inputs[0]!) === 1 && isTrainingBatchNorm(bn, producer) && requires.has(bn.inputs[0]!) ? bn : undefined;
  };
  for (let i = g.body.nodes.length - 1; i >= 0; i--) {
    const n = g.body.nodes[i];
    const gos = n.outputs.map((o) => grads.get(o) ?? null);
    if (!gos.some((x) => x)) continue;
    const needs = n.inputs.map((v) => !!v && requires.has(v));
    if (!needs.some((x) => x)) continue;
    const bnUnderRelu = reluOfBatchNorm(n);
    if (bnUnderRelu || (isTrainingBatchNorm(n, producer) && needs[0] && gos[0])) {
      // dx through mean and var as well: the statistics get no gradient from this node (other
      // readers of them still send theirs through batch_norm_stats' own rule). Under a relu, the
      // relu's gradient too (the batch norm's output then gets none: the relu was its one reader).
      const bn = bnUnderRelu ?? n;
      const [x, mean, variance, weight, bias] = bn.inputs;
      const needW = !!weight && requires.has(weight), needB = !!bias && requires.has(bias);
      const [dx, dw, db] = caller.call('batch_norm_backward', [gos[0], x, mean, variance, weight, bnUnderRelu ? n.outputs[0] : null], { eps: bn.attrs.eps });
      addGrad(x!, dx);
      if (needW) addGrad(weight!, dw);
      if (needB) addGrad(bias!, db);
      continue;
    }
    const def = hasOp(n.op) ? getOp(n.op) : undefined;
    if (n.op === 'host_call') throw new AutodiffUnsupported(`the @jit.ignore method ${String(n.attrs.name)}${n.meta.loc ? ` (called at ${n.meta.loc})` : ''} takes a tensor that needs a gradient, and a host call has no gradient rule`, locOf(n));
    if (!def?.grad) throw new AutodiffUnsupported(`op '${n.op}' has no gradient rule in its ir-spec entry`, locOf(n));
    const out = def.grad.rule(gb, {
      attrs: n.attrs,
      inputs: n.inputs.map((v) => v ?? undefined),
      outputs: n.outputs,
      inputTypes: n.inputs.map((v) => (v && v.type.kind === 'tensor' ? tensorOf(v) : null)),
      outputTypes: n.outputs.map((v) => tensorOf(v)),
      gradOutputs: gos,
      needsInputGrad: needs,
    });
    out.forEach((gv, j) => {
      const v = n.inputs[j];
      if (!gv || !v || !needs[j]) return;
      addGrad(v, gb.sumToShape(gv, tensorOf(v).shape));
    });
  }

  const gradInputs: string[] = [];
  for (const i of g.inputs) {
    const gv = grads.get(i.value);
    if (!requires.has(i.value) || !gv) continue;
    // A gradient that is a backward input as it is (y = x) still needs a node to be an output of its own.
    b.output(`${GRAD_PREFIX}${i.name}`, backInputs.has(gv) ? gb.mulScalar(gv, 1) : gv);
    gradInputs.push(i.name);
  }
  const backward = b.build();
  const forward = new Graph(g.name, g.inputs, g.body, [...g.outputs, ...saved], g.tensors, g.metadata);
  return { forward, backward, savedInputs, savedValues: saved.map((s) => s.name), gradOutputs, gradInputs, recomputed };
}

/** batch_norm(x, mean, var, …) with (mean, var) the outputs of one batch_norm_stats(x): training mode. */
function isTrainingBatchNorm(n: Node, producer: ReadonlyMap<Value, Node>): boolean {
  if (n.op !== 'batch_norm') return false;
  const [x, mean, variance] = n.inputs;
  const stats = mean ? producer.get(mean) : undefined;
  return !!stats && stats.op === 'batch_norm_stats' && stats.inputs[0] === x && stats.outputs[0] === mean && stats.outputs[1] === variance;
}

function locOf(n: { readonly meta: { readonly loc?: unknown } }): string | undefined {
  return typeof n.meta.loc === 'string' ? n.meta.loc : undefined;
}

function isFloat(v: Value): boolean {
  return v.type.kind === 'tensor' && v.type.dtype === 'float32';
}

function tensorOf(v: Value): TensorType {
  if (v.type.kind !== 'tensor') throw new AutodiffUnsupported(`a gradient rule reads a ${v.type.kind} value as a tensor`);
  return { dtype: v.type.dtype, shape: v.type.shape };
}

