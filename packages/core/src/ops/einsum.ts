// einsum as a composite: each operand is brought to one shared label order (diagonals taken for
// a label repeated within an operand, missing labels as size-1 axes), the operands multiply with
// broadcasting, and the labels absent from the output are summed. Invariant: only dispatched ops
// (permute/reshape/mul/sum/index_select), so it differentiates, traces and scripts like any
// composite. Operands are contracted pairwise, left to right, each pair as one batched matmul
// (labels in both and needed later are the batch, labels in both and not needed the reduction),
// so no broadcast product of all operands is materialized; a pair whose shared labels
// broadcast (size 1 against n) multiplies and sums instead.

import { OpError } from '@kiln/ir-spec';
import { Tensor } from '../tensor.js';
import { dispatch1 } from '../dispatch.js';

interface Parsed { inputs: string[][]; output: string[] }

function parse(equation: string, operands: readonly Tensor[]): Parsed {
  const eq = equation.replace(/\s+/g, '');
  const [lhs, rhs] = eq.split('->');
  const inputs = lhs.split(',').map((s) => s.split(''));
  if (inputs.length !== operands.length) throw new OpError('einsum', `'${equation}' names ${inputs.length} operands but ${operands.length} were given`);
  if (eq.includes('.')) throw new OpError('einsum', `'${equation}': ellipsis ('...') is not supported; name every dim with a letter`);
  inputs.forEach((labels, i) => {
    if (labels.some((c) => !/[a-zA-Z]/.test(c))) throw new OpError('einsum', `'${equation}': operand ${i} has a label that is not a letter`);
    if (labels.length !== operands[i].ndim) throw new OpError('einsum', `'${equation}': operand ${i} has ${labels.length} labels but ${operands[i].ndim} dims (shape [${operands[i].shape.join(',')}])`);
  });
  let output: string[];
  if (rhs === undefined) {
    // Implicit output: the labels that appear exactly once, in alphabetical order.
    const counts = new Map<string, number>();
    for (const l of inputs.flat()) counts.set(l, (counts.get(l) ?? 0) + 1);
    output = [...counts].filter(([, n]) => n === 1).map(([l]) => l).sort();
  } else {
    output = rhs.split('');
    const all = new Set(inputs.flat());
    for (const l of output) if (!all.has(l)) throw new OpError('einsum', `'${equation}': output label '${l}' does not appear in any operand`);
    if (new Set(output).size !== output.length) throw new OpError('einsum', `'${equation}': output label repeated`);
  }
  return { inputs, output };
}

/** The diagonal over repeated labels of one operand: every label once, first-seen order. */
function dedupe(x: Tensor, labels: string[]): [Tensor, string[]] {
  const uniq = [...new Set(labels)];
  if (uniq.length === labels.length) return [x, labels];
  const sizes = new Map<string, number>();
  labels.forEach((l, i) => {
    const s = sizes.get(l);
    if (s !== undefined && s !== x.shape[i]) throw new OpError('einsum', `label '${l}' has sizes ${s} and ${x.shape[i]} in one operand`);
    sizes.set(l, x.shape[i]);
  });
  const outShape = uniq.map((l) => sizes.get(l)!);
  const strides = x.shape.map((_, i) => x.shape.slice(i + 1).reduce((a, b) => a * b, 1));
  const n = outShape.reduce((a, b) => a * b, 1);
  const pos = new Int32Array(n);
  for (let k = 0; k < n; k++) {
    let r = k;
    const at = new Map<string, number>();
    for (let u = uniq.length - 1; u >= 0; u--) { at.set(uniq[u], r % outShape[u]); r = Math.floor(r / outShape[u]); }
    pos[k] = labels.reduce((off, l, i) => off + at.get(l)! * strides[i], 0);
  }
  const flat = dispatch1('reshape', [x], { shape: [x.numel()] });
  const picked = dispatch1('index_select', [flat, Tensor._fromCpu({ data: pos, shape: [n], dtype: 'int32' })], { dim: 0 });
  return [dispatch1('reshape', [picked], { shape: outShape }), uniq];
}

/** `x` (labels `have`) permuted to the order of `order` with size-1 axes for missing labels. */
function align(x: Tensor, have: string[], order: string[]): Tensor {
  const present = order.filter((l) => have.includes(l));
  const p = present.map((l) => have.indexOf(l));
  const perm = p.every((v, i) => v === i) ? x : dispatch1('permute', [x], { dims: p });
  return dispatch1('reshape', [perm], { shape: order.map((l) => (have.includes(l) ? x.shape[have.indexOf(l)] : 1)) });
}

/**
 * Einstein summation (torch.einsum): letters name dims, `->` gives the output (implicit: the
 * labels seen once, sorted). Ellipsis is not supported.
 * @example einsum('bij,bjk->bik', a, b); einsum('ii', m) // trace
 */
export function einsum(equation: string, ...operands: Tensor[] | [Tensor[]]): Tensor {
  const ops: Tensor[] = operands.length === 1 && Array.isArray(operands[0]) ? operands[0] : (operands as Tensor[]);
  const { inputs, output } = parse(equation, ops);
  const deduped = ops.map((x, i) => dedupe(x, inputs[i]));
  const size = new Map<string, number>();
  deduped.forEach(([x, labels]) => labels.forEach((l, i) => {
    const s = size.get(l);
    if (s !== undefined && s !== x.shape[i] && s !== 1 && x.shape[i] !== 1) throw new OpError('einsum', `label '${l}' has sizes ${s} and ${x.shape[i]}`);
    if (s === undefined || s === 1) size.set(l, x.shape[i]);
  }));
  // Labels nothing after operand i reads (output or later operands) are summed out early.
  let [acc, accLabels] = deduped[0];
  for (let i = 1; i <= deduped.length; i++) {
    const later = new Set([...output, ...deduped.slice(i + 1).flatMap(([, l]) => l)]);
    if (i === deduped.length) {
      [acc, accLabels] = sumOut(acc, accLabels, new Set(output));
      break;
    }
    const [b, bLabels] = deduped[i];
    [acc, accLabels] = contract(acc, accLabels, b, bLabels, later);
  }
  const perm = output.map((l) => accLabels.indexOf(l));
  let out = perm.every((v, i) => v === i) ? acc : dispatch1('permute', [acc], { dims: perm });
  // Output labels seen only as size 1 expand to their size.
  const shape = output.map((l) => size.get(l)!);
  if (!out.shape.every((d, i) => d === shape[i])) out = dispatch1('expand', [out], { shape });
  return out;
}

/** Sums the labels of `x` not in `keep`. */
function sumOut(x: Tensor, labels: string[], keep: Set<string>): [Tensor, string[]] {
  const gone = labels.map((l, i) => (keep.has(l) ? -1 : i)).filter((i) => i >= 0);
  if (!gone.length) return [x, labels];
  return [dispatch1('sum', [x], { dim: gone, keepdim: false }), labels.filter((l) => keep.has(l))];
}

/** a·b over their shared labels, keeping the labels in `keep`: one batched matmul. */
function contract(a: Tensor, la: string[], b: Tensor, lb: string[], keep: Set<string>): [Tensor, string[]] {
  const inB = new Set(lb), inA = new Set(la);
  [a, la] = sumOut(a, la, new Set([...keep, ...lb]));
  [b, lb] = sumOut(b, lb, new Set([...keep, ...la]));
  const sizeA = (l: string) => a.shape[la.indexOf(l)], sizeB = (l: string) => b.shape[lb.indexOf(l)];
  const shared = la.filter((l) => inB.has(l));
  if (shared.some((l) => sizeA(l) !== sizeB(l))) {
    // Broadcasting labels: multiply in one label order, then sum what is not kept.
    const order = [...new Set([...la, ...lb])];
    const prod = dispatch1('mul', [align(a, la, order), align(b, lb, order)]);
    return sumOut(prod, order, keep);
  }
  const batch = shared.filter((l) => keep.has(l)), red = shared.filter((l) => !keep.has(l));
  const aOnly = la.filter((l) => !inB.has(l)), bOnly = lb.filter((l) => !inA.has(l));
  const n = (ls: string[], f: (l: string) => number) => ls.reduce((p, l) => p * f(l), 1);
  const am = permuted(a, la, [...batch, ...aOnly, ...red]);
  const bm = permuted(b, lb, [...batch, ...red, ...bOnly]);
  const B = n(batch, sizeA), M = n(aOnly, sizeA), K = n(red, sizeA), N = n(bOnly, sizeB);
  const y = dispatch1('matmul', [dispatch1('reshape', [am], { shape: [B, M, K] }), dispatch1('reshape', [bm], { shape: [B, K, N] })]);
  const labels = [...batch, ...aOnly, ...bOnly];
  return [dispatch1('reshape', [y], { shape: [...batch.map(sizeA), ...aOnly.map(sizeA), ...bOnly.map(sizeB)] }), labels];
}

function permuted(x: Tensor, have: string[], order: string[]): Tensor {
  const p = order.map((l) => have.indexOf(l));
  return p.every((v, i) => v === i) ? x : dispatch1('permute', [x], { dims: p });
}
