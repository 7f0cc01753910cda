// The LSTM, GRU and Elman RNN step functions, written once over a tiny set of operations so that eager
// mode (tensors) and the recurrent graph a trace records (IR values, rnn-graph.ts) compute the
// same formula with the same ops in the same order. Invariant: gate order is PyTorch's
// (LSTM i,f,g,o; GRU r,z,n), and a cell uses only the operations of CellOps.

/** The operations a cell uses, on values of type V (tensors, or IR values being built). */
export interface CellOps<V> {
  /** x·wᵀ + b over the last dim. */
  linear(x: V, w: V, b: V | null): V;
  add(a: V, b: V): V;
  sub(a: V, b: V): V;
  mul(a: V, b: V): V;
  sigmoid(a: V): V;
  tanh(a: V): V;
  relu(a: V): V;
  /** `n` equal parts along the last dim. */
  chunk(x: V, n: number): V[];
}

/** One step: `xw` is x·W_ihᵀ + b_ih; returns the new hidden state and (LSTM) cell state. */
export type Cell = <V>(o: CellOps<V>, xw: V, h: V, c: V | null, wHh: V, bHh: V | null) => [V, V | null];

/** LSTM step. Gates i, f, g, o. */
export const lstmCell: Cell = (o, xw, h, c, wHh, bHh) => {
  if (!c) throw new Error('LSTM: internal error: the cell state is missing');
  const [i, f, g, out] = o.chunk(o.add(xw, o.linear(h, wHh, bHh)), 4);
  const c2 = o.add(o.mul(o.sigmoid(f), c), o.mul(o.sigmoid(i), o.tanh(g)));
  return [o.mul(o.sigmoid(out), o.tanh(c2)), c2];
};

/** GRU step. Gates r, z, n with n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)). */
export const gruCell: Cell = (o, xw, h, _c, wHh, bHh) => {
  const [xr, xz, xn] = o.chunk(xw, 3);
  const [hr, hz, hn] = o.chunk(o.linear(h, wHh, bHh), 3);
  const r = o.sigmoid(o.add(xr, hr));
  const z = o.sigmoid(o.add(xz, hz));
  const n = o.tanh(o.add(xn, o.mul(r, hn)));
  // (1 - z)·n + z·h, written with one fewer op.
  return [o.add(n, o.mul(z, o.sub(h, n))), null];
};

/** Elman RNN step with tanh: h' = tanh(W_ih x + b_ih + W_hh h + b_hh). */
export const rnnTanhCell: Cell = (o, xw, h, _c, wHh, bHh) => [o.tanh(o.add(xw, o.linear(h, wHh, bHh))), null];

/** Elman RNN step with relu. */
export const rnnReluCell: Cell = (o, xw, h, _c, wHh, bHh) => [o.relu(o.add(xw, o.linear(h, wHh, bHh))), null];

/** The recurrent layer kinds (PyTorch's RNNBase modes). */
export type RecurrentKind = 'LSTM' | 'GRU' | 'RNN_TANH' | 'RNN_RELU';

/** The step function and the number of gates of a kind. */
export function cellOf(kind: RecurrentKind): { cell: Cell; gates: number } {
  switch (kind) {
    case 'LSTM': return { cell: lstmCell, gates: 4 };
    case 'GRU': return { cell: gruCell, gates: 3 };
    case 'RNN_TANH': return { cell: rnnTanhCell, gates: 1 };
    case 'RNN_RELU': return { cell: rnnReluCell, gates: 1 };
  }
}
