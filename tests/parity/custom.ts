// Golden families whose cases are not single op calls (optimizer steps, autograd programs).
// Each runner checks one case and returns how many tensors it compared. The autograd runners
// are TypeScript transcriptions of each case's `python` source, line by line.

import { Tensor, F, autograd, nn, optim, utils } from '@kiln/core';
import type { GoldenCase, GoldenTensor, Tol } from './golden.js';
import { expectClose, fromGolden } from './golden.js';
import { runConvBnFold } from './conv-bn-fold.js';
import { runQuantizeDynamic } from './quantize-dynamic.js';

export type CaseRunner = (c: GoldenCase, tol: Tol) => number;

// ---- optim ---------------------------------------------------------------------------------

/** Golden (Python) keyword names → Kiln option names. */
const OPTION_NAMES: Record<string, string> = {
  lr: 'lr', momentum: 'momentum', dampening: 'dampening', weight_decay: 'weightDecay', nesterov: 'nesterov',
  maximize: 'maximize', betas: 'betas', eps: 'eps', amsgrad: 'amsgrad', alpha: 'alpha', centered: 'centered',
  lr_decay: 'lrDecay', initial_accumulator_value: 'initialAccumulatorValue',
};

function camelOptions(attrs: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(attrs)) {
    const name = OPTION_NAMES[k];
    if (!name) throw new Error(`optim golden case: unknown option '${k}'`);
    out[name] = v;
  }
  return out;
}

type AnyOptimizer = optim.Optimizer<object>;

function makeOptimizer(op: string, params: Tensor[], attrs: Record<string, unknown>): AnyOptimizer {
  const o = camelOptions(attrs);
  switch (op) {
    case 'optim.SGD': return new optim.SGD(params, { lr: Number(o.lr), ...o });
    case 'optim.Adam': return new optim.Adam(params, o);
    case 'optim.AdamW': return new optim.AdamW(params, o);
    case 'optim.RMSprop': return new optim.RMSprop(params, o);
    case 'optim.Adagrad': return new optim.Adagrad(params, o);
    default: throw new Error(`no optimizer for golden op '${op}'`);
  }
}

/** Compares one parameter's optimizer state with the golden state object. */
function checkState(got: optim.ParamState | undefined, want: Record<string, GoldenTensor | number | null>, tol: Tol, what: string): number {
  let n = 0;
  for (const [k, w] of Object.entries(want)) {
    const g = got?.[k] ?? null;
    if (w === null) {
      if (g !== null) throw new Error(`${what}: state '${k}' should be null, got ${String(g)}`);
      continue;
    }
    if (typeof w === 'number' || typeof g === 'number') {
      // PyTorch 1.13 keeps `step` as a 0-d tensor (Adam, Adagrad) or an int (RMSprop); Kiln as a number.
      const wv = typeof w === 'number' ? w : Number(w.data![0]);
      if (g !== wv) throw new Error(`${what}: state '${k}' is ${String(g)}, expected ${wv}`);
    } else {
      expectClose(g, w, tol, `${what}: state '${k}'`);
    }
    n++;
  }
  // Nothing beyond PyTorch's state: extra keys must be null (e.g. Adam's max_exp_avg_sq without amsgrad).
  for (const [k, v] of Object.entries(got ?? {})) {
    if (v !== null && !(k in want)) throw new Error(`${what}: unexpected state '${k}'`);
  }
  return n;
}

function runOptim(c: GoldenCase, tol: Tol): number {
  const params = (c.params as GoldenTensor[]).map((g) => fromGolden(g, { requiresGrad: true }));
  const opt = makeOptimizer(c.op, params, c.attrs ?? {});
  let n = 0;
  for (let s = 0; s < c.steps; s++) {
    opt.zeroGrad();
    params.forEach((p, i) => { p.grad = fromGolden(c.grads_per_step[s][i]); });
    opt.step();
    params.forEach((p, i) => {
      expectClose(p, c.params_after_step[s][i], tol, `${c.name} step ${s} param ${i}`);
      n++;
      n += checkState(opt.state.get(p), c.state_after_step[s][i], tol, `${c.name} step ${s} param ${i}`);
    });
  }
  return n;
}

// ---- autograd --------------------------------------------------------------------------------

type Inputs = Record<string, Tensor>;
type Results = Record<string, Tensor | null>;

/** The case's inputs by name, as fresh leaves (the transcriptions call requiresGrad_ as the source does). */
function namedInputs(c: GoldenCase): Inputs {
  return Object.fromEntries((c.inputs as GoldenTensor[]).map((g) => [g.name!, fromGolden(g)]));
}

/** A module whose parameters are the case's `param_<state_dict name>` inputs. */
function withParams<M extends nn.Module>(m: M, inp: Inputs): M {
  const sd: Record<string, Tensor> = {};
  for (const [k, v] of Object.entries(inp)) if (k.startsWith('param_')) sd[k.slice('param_'.length)] = v;
  m.loadStateDict(sd, { strict: true });
  return m;
}

const g1 = (outputs: Tensor, inputs: Tensor[], createGraph = false): Tensor[] =>
  autograd.grad(outputs, inputs, { createGraph }).map((g, i) => {
    if (!g) throw new Error(`autograd.grad gave no gradient for input ${i}`);
    return g;
  });

/** `x @ W.t() + b` as the sources write it. */
const affine = (x: Tensor, W: Tensor, b: Tensor): Tensor => x.matmul(W.t()).add(b);

const programs: Record<string, (inp: Inputs, attrs: Record<string, any>) => Results> = {
  double_backward_tanh: ({ x, G }) => {
    x.requiresGrad_();
    const y = x.tanh();
    const [dy] = g1(y.sum(), [x], true);
    const [d2] = g1(dy.mul(G).sum(), [x]);
    return { y, dy_dx: dy, grad_of_dy_dx_times_G: d2 };
  },

  double_backward_mlp: ({ x, W1, b1, W2, b2 }) => {
    const params = [W1, b1, W2, b2, x].map((t) => t.requiresGrad_());
    const out = affine(affine(x, W1, b1).tanh(), W2, b2);
    const loss = out.pow(2).mean();
    const g = g1(loss, params, true);
    const penalty = g.slice(1).reduce((acc, gi) => acc.add(gi.pow(2).sum()), g[0].pow(2).sum());
    const g2 = g1(penalty, params);
    const names = ['W1', 'b1', 'W2', 'b2', 'x'];
    const res: Results = { out, loss, penalty };
    names.forEach((n, i) => { res[`grad_${n}`] = g[i]; res[`grad2_${n}`] = g2[i]; });
    return res;
  },

  input_gradient_penalty: ({ x, W1, b1, W2, b2 }) => {
    [x, W1, b1, W2, b2].forEach((t) => t.requiresGrad_());
    const out = affine(F.softplus(affine(x, W1, b1)), W2, b2);
    const [gx] = g1(out.sum(), [x], true);
    const gp = gx.norm(2, 1).sub(1).pow(2).mean();
    const [gW1, gb1, gW2] = g1(gp, [W1, b1, W2]);
    return { out, grad_x: gx, gradient_penalty: gp, grad_W1: gW1, grad_b1: gb1, grad_W2: gW2 };
  },

  maml_one_inner_step: ({ W1, b1, W2, b2, x_support: xs, y_support: ys, x_query: xq, y_query: yq }, attrs) => {
    const params = [W1, b1, W2, b2].map((t) => t.requiresGrad_());
    const f = (x: Tensor, p: Tensor[]) => affine(affine(x, p[0], p[1]).tanh(), p[2], p[3]);
    const innerLr: number = attrs.inner_lr;
    const innerLoss = F.mseLoss(f(xs, params), ys);
    const innerGrads = g1(innerLoss, params, true);
    const adapted = params.map((p, i) => p.sub(innerGrads[i].mul(innerLr)));
    const outerLoss = F.mseLoss(f(xq, adapted), yq);
    const meta = g1(outerLoss, params);
    const fo = adapted.map((a) => a.detach().requiresGrad_());
    const foGrads = g1(F.mseLoss(f(xq, fo), yq), fo);
    const res: Results = { inner_loss: innerLoss, outer_loss: outerLoss };
    ['W1', 'b1', 'W2', 'b2'].forEach((n, i) => {
      res[`inner_grad_${n}`] = innerGrads[i];
      res[`adapted_${n}`] = adapted[i];
      res[`meta_grad_${n}`] = meta[i];
      res[`first_order_grad_${n}`] = foGrads[i];
    });
    return res;
  },

  maml_two_inner_steps: ({ W, b, x_support: xs, y_support: ys, x_query: xq, y_query: yq }, attrs) => {
    [W, b].forEach((t) => t.requiresGrad_());
    const innerLr: number = attrs.inner_lr;
    let p = [W, b];
    for (let s = 0; s < attrs.inner_steps; s++) {
      const loss = affine(xs, p[0], p[1]).tanh().sub(ys).pow(2).sum();
      const g = g1(loss, p, true);
      p = p.map((pi, i) => pi.sub(g[i].mul(innerLr)));
    }
    const outerLoss = affine(xq, p[0], p[1]).tanh().sub(yq).pow(2).sum();
    const [gW, gb] = g1(outerLoss, [W, b]);
    return { adapted_W: p[0], adapted_b: p[1], outer_loss: outerLoss, meta_grad_W: gW, meta_grad_b: gb };
  },

  grad_accumulation: (inp, attrs) => {
    const model = withParams(new nn.Sequential(new nn.Linear(3, 4), new nn.Tanh(), new nn.Linear(4, 2)), inp);
    const { x, y } = inp;
    const mb: number = attrs.micro_batch_size;
    const res: Results = {};
    for (const red of ['sum', 'mean'] as const) {
      model.zeroGrad();
      F.mseLoss(model.forward(x), y, { reduction: red }).backward();
      const full = model.namedParameters().map(([n, p]) => [n, p.grad!.clone()] as const);
      model.zeroGrad();
      for (let i = 0; i < attrs.micro_batches; i++) {
        const xs = x.slice(0, mb * i, mb * i + mb), ysl = y.slice(0, mb * i, mb * i + mb);
        F.mseLoss(model.forward(xs), ysl, { reduction: red }).backward();
      }
      const accum = new Map(model.namedParameters().map(([n, p]) => [n, p.grad!.clone()]));
      for (const [n, g] of full) {
        res[`${red}_full_grad_${n}`] = g;
        res[`${red}_accumulated_grad_${n}`] = accum.get(n)!;
      }
    }
    return res;
  },

  checkpoint: (inp) => {
    const net = withParams(new nn.Sequential(
      new nn.Linear(4, 6), new nn.Tanh(), new nn.Linear(6, 6), new nn.Tanh(), new nn.Linear(6, 3)), inp);
    const { x, G } = inp;
    const layer = (i: number, t: Tensor): Tensor => net.get(i).forward(t);
    const res: Results = {};
    for (const mode of ['plain', 'checkpoint_reentrant', 'checkpoint_non_reentrant', 'checkpoint_sequential']) {
      net.zeroGrad();
      const xi = x.clone().requiresGrad_();
      let out: Tensor;
      if (mode === 'plain') out = net.forward(xi);
      else if (mode === 'checkpoint_sequential') out = utils.checkpointSequential(net, 2, xi);
      else {
        // Kiln has one checkpoint; it covers both of PyTorch's variants (see utils/checkpoint.ts).
        const h = utils.checkpoint((t: Tensor) => layer(3, layer(2, layer(1, layer(0, t)))), xi);
        out = layer(4, h);
      }
      out.mul(G).sum().backward();
      res[`${mode}_output`] = out;
      res[`${mode}_grad_x`] = xi.grad!.clone();
      for (const [n, p] of net.namedParameters()) res[`${mode}_grad_${n}`] = p.grad!.clone();
    }
    return res;
  },

  backward_twice_accumulates: ({ w, x }) => {
    w.requiresGrad_();
    const loss = w.mul(x).exp().sum();
    loss.backward({ retainGraph: true });
    const first = w.grad!.clone();
    loss.backward();
    return { loss, grad_after_first_backward: first, grad_after_second_backward: w.grad!.clone() };
  },

  shared_weight: ({ W, x }) => {
    W.requiresGrad_();
    const h = x.matmul(W.t()).tanh();
    const out = h.matmul(W);
    const loss = out.pow(2).sum();
    const [gW] = g1(loss, [W]);
    return { out, loss, grad_W: gW };
  },

  detach_and_inplace: ({ x }) => {
    x.requiresGrad_();
    const y = x.mul(x.detach());
    const z = x.sin();
    z.mul_(2.0);
    const loss = y.sum().add(z.sum());
    const [gx] = g1(loss, [x]);
    return { y, z, grad_x: gx };
  },
};

/** Runs a transcribed program and compares every golden result (and nothing is left out). */
function runAutograd(c: GoldenCase, tol: Tol): number {
  const program = programs[c.name];
  if (!program) throw new Error(`no TypeScript transcription of autograd case '${c.name}' in tests/parity/custom.ts`);
  const got = program(namedInputs(c), c.attrs ?? {});
  const want = c.results as Record<string, GoldenTensor>;
  for (const k of Object.keys(got)) if (!(k in want)) throw new Error(`${c.name}: result '${k}' is not in the golden case`);
  let n = 0;
  for (const [k, w] of Object.entries(want)) {
    expectClose(got[k], w, tol, `${c.name} result ${k}`);
    n++;
  }
  return n;
}

export const customRunners: Record<string, CaseRunner> = {
  optim: runOptim,
  autograd: runAutograd,
  conv_bn_fold: runConvBnFold,
  quantize_dynamic: runQuantizeDynamic,
};
