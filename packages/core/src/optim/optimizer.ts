// The optimizer base (torch.optim.Optimizer): parameter groups with per-group options, per-
// parameter state under PyTorch's names, zeroGrad and step. Invariant: step() only touches
// parameters whose `.grad` is set, writes them in place (their storage keeps its identity, so
// modules and views see the update) and bumps each written storage's version counter, so a
// graph that saved the old value fails loudly in backward instead of using a stale value.

import { fmtShape } from '@kiln/ir-spec';
import { Tensor } from '../tensor.js';
import { DeviceError } from '../device.js';
import { keep } from '../lifetime.js';
import { enableGrad, noGrad } from '../autograd/grad-mode.js';

/** State kept for one parameter: tensors such as `exp_avg`, and the `step` count. */
export type ParamState = Record<string, Tensor | number | null>;

/** One parameter group: its parameters plus the (resolved) options that apply to them. */
export type ParamGroup<O> = O & { params: Tensor[] };

/** A group as the user passes it: options missing here come from the optimizer's defaults. */
export type ParamGroupSpec<O> = Partial<O> & { params: Iterable<Tensor> };

/** What optimizers accept: parameters (e.g. `model.parameters()`) or a list of groups. */
export type ParamsArg<O> = Iterable<Tensor> | readonly ParamGroupSpec<O>[];

/** A serializable snapshot of an optimizer (PyTorch's state_dict layout; params by index). */
export interface OptimizerStateDict<O> {
  state: Record<number, ParamState>;
  paramGroups: (O & { params: number[] })[];
}

/**
 * Base class of all optimizers. Subclasses define the defaults, validate options and implement
 * `updateGroup`, which runs under noGrad.
 *
 * @example
 * const opt = new optim.SGD(model.parameters(), { lr: 0.1, momentum: 0.9 });
 * opt.zeroGrad(); loss.backward(); opt.step();
 */
export abstract class Optimizer<O extends object, S extends ParamState = ParamState> {
  readonly paramGroups: ParamGroup<O>[] = [];
  /** Per-parameter state, created on a parameter's first update. */
  readonly state = new Map<Tensor, S>();

  constructor(readonly name: string, params: ParamsArg<O>, readonly defaults: Readonly<O>) {
    const items: Iterable<Tensor | ParamGroupSpec<O>> = params;
    const list = Array.from(items);
    if (list.length === 0) throw new Error(`${name}: got an empty parameter list; pass model.parameters() or a list of parameter groups`);
    if (list.every((x): x is Tensor => x instanceof Tensor)) this.addGroup(list, {});
    else for (const g of list) {
      if (g instanceof Tensor) throw new Error(`${name}: mix of tensors and parameter groups; pass either parameters or groups ({ params, ...options })`);
      this.addParamGroup(g);
    }
  }

  /** Adds a group (PyTorch's add_param_group); its missing options come from the defaults. */
  addParamGroup(spec: ParamGroupSpec<O>): void {
    this.addGroup(Array.from(spec.params), withoutParams(spec));
  }

  private addGroup(params: Tensor[], opts: object): void {
    const seen = new Set(this.paramGroups.flatMap((g) => g.params));
    params.forEach((p, i) => {
      if (!(p instanceof Tensor)) throw new Error(`${this.name}: parameter ${i} of a group is not a Tensor`);
      if (p.dtype !== 'float32') throw new Error(`${this.name}: can only optimize float32 tensors, parameter ${i} (shape ${fmtShape(p.shape)}) is ${p.dtype}`);
      if (!p.isLeaf) throw new Error(`${this.name}: can't optimize a non-leaf tensor (parameter ${i}, shape ${fmtShape(p.shape)}); pass the leaf parameters, or detach() it and call requiresGrad_()`);
      if (seen.has(p)) throw new Error(`${this.name}: parameter ${i} (shape ${fmtShape(p.shape)}) appears in more than one parameter group`);
      seen.add(p);
    });
    const group = { ...this.defaults, ...opts, params } as ParamGroup<O>;
    this.validate(group);
    this.paramGroups.push(group);
  }

  /** Drops (default) or zeroes the gradients of all parameters. */
  zeroGrad(opts: { setToNone?: boolean } = {}): void {
    const setToNone = opts.setToNone ?? true;
    for (const g of this.paramGroups) {
      for (const p of g.params) {
        if (!p._grad) continue;
        // A gradient backward made and nobody was handed (see Tensor.grad) goes back to the pool now.
        if (setToNone) { p.zeroGrad(); continue; }
        // A gradient built with createGraph carries history: cut it before zeroing in place.
        if (p._grad.gradFn) p.grad = p._grad.detach();
        const gd = p._grad!;
        noGrad(() => gd.zero_());
      }
    }
  }

  /**
   * Performs one update of every parameter that has a gradient. `closure`, if given, re-evaluates
   * the model and returns the loss (it runs with grad enabled); step returns that loss.
   */
  step(closure?: () => Tensor | number): Tensor | number | undefined {
    const loss = closure ? enableGrad(closure) : undefined;
    noGrad(() => { for (const g of this.paramGroups) this.updateGroup(g); });
    // State made at the first step outlives the tidy() the step may run in.
    for (const st of this.state.values()) for (const v of Object.values(st as object)) if (v instanceof Tensor) keep(v);
    return loss;
  }

  /** Checks a group's options; throws naming the optimizer and the bad value. */
  protected abstract validate(group: ParamGroup<O>): void;
  /** Updates the parameters of one group (called under noGrad). */
  protected abstract updateGroup(group: ParamGroup<O>): void;

  /**
   * The parameters of `group` that have a gradient, each with its data and its gradient's
   * (checked to be float32 and of the parameter's size): the only ones an update may write.
   */
  protected *withGrads(group: ParamGroup<O>): Generator<[p: Tensor, pd: Float32Array, gd: Float32Array]> {
    for (const p of group.params) {
      if (!p._grad || (this.gpuSteps && p.device === 'webgpu')) continue;
      if (p.device === 'webgpu') throw new DeviceError(`${this.name}: this optimizer has no WebGPU step; SGD, Adam, AdamW, Adagrad and RMSprop do (or move the model to the CPU with await model.toAsync('cpu'))`);
      yield [p, f32(p, `${this.name}: a parameter`), gradData(this.name, p, p._grad)];
    }
  }

  /** Set by optimizers that update 'webgpu' parameters themselves (through onGpu). */
  protected readonly gpuSteps: boolean = false;

  /** The 'webgpu' parameters of `group` that have a gradient (on the same device), with it. */
  protected *onGpu(group: ParamGroup<O>): Generator<[p: Tensor, g: Tensor]> {
    for (const p of group.params) {
      const g = p._grad; // read without handing it out, so zeroGrad() may free it
      if (!g || p.device !== 'webgpu') continue;
      if (g.device !== 'webgpu' || g.numel() !== p.numel() || g.dtype !== 'float32') {
        throw new DeviceError(`${this.name}: the gradient of a 'webgpu' parameter of shape ${fmtShape(p.shape)} is a ${g.dtype} tensor of shape ${fmtShape(g.shape)} on '${g.device}'; it must be float32, of the parameter's size, on 'webgpu'`);
      }
      yield [p, g];
    }
  }

  /** The state of `p`, created by `init` on first use. */
  protected stateOf(p: Tensor, init: () => S): S {
    let s = this.state.get(p);
    if (!s) { s = init(); this.state.set(p, s); }
    return s;
  }

  /** A snapshot: state tensors are copied, parameters are referred to by their index. */
  stateDict(): OptimizerStateDict<O> {
    const index = new Map<Tensor, number>();
    const state: Record<number, ParamState> = {};
    const paramGroups = this.paramGroups.map((g) => {
      const ids = g.params.map((p) => {
        const id = index.size;
        index.set(p, id);
        const s = this.state.get(p);
        if (s) state[id] = copyState(s);
        return id;
      });
      return { ...withoutParams(g), params: ids } as O & { params: number[] };
    });
    return { state, paramGroups };
  }

  /** Restores a stateDict() taken from an optimizer over parameters of the same shapes. */
  loadStateDict(sd: OptimizerStateDict<O>): void {
    if (sd.paramGroups.length !== this.paramGroups.length) {
      throw new Error(`${this.name}.loadStateDict: the state dict has ${sd.paramGroups.length} parameter groups, this optimizer ${this.paramGroups.length}`);
    }
    const byId = new Map<number, Tensor>();
    sd.paramGroups.forEach((sg, gi) => {
      const g = this.paramGroups[gi];
      if (sg.params.length !== g.params.length) {
        throw new Error(`${this.name}.loadStateDict: group ${gi} has ${sg.params.length} parameters in the state dict, ${g.params.length} here`);
      }
      sg.params.forEach((id, k) => byId.set(id, g.params[k]));
    });
    this.state.clear();
    for (const [id, s] of Object.entries(sd.state)) {
      const p = byId.get(Number(id));
      if (!p) throw new Error(`${this.name}.loadStateDict: state for parameter ${id}, which no group lists`);
      for (const v of Object.values(s)) {
        if (v instanceof Tensor && v.numel() !== p.numel() && v.numel() !== 1) {
          throw new Error(`${this.name}.loadStateDict: state tensor of shape ${fmtShape(v.shape)} does not fit parameter ${id} of shape ${fmtShape(p.shape)}`);
        }
      }
      this.state.set(p, copyState(s) as S);
    }
    sd.paramGroups.forEach((sg, gi) => {
      const g = this.paramGroups[gi];
      Object.assign(g, withoutParams(sg));
    });
  }
}

function withoutParams<T extends { params: unknown }>(g: T): Omit<T, 'params'> {
  const { params: _, ...rest } = g;
  return rest;
}

function copyState(s: ParamState): ParamState {
  const out: ParamState = {};
  for (const [k, v] of Object.entries(s)) out[k] = v instanceof Tensor ? newBuffer(v.shape, v.data) : v;
  return out;
}

/** The Float32Array behind a float32 tensor (parameters, gradients and state buffers). */
export function f32(t: Tensor, what: string): Float32Array {
  const d = t.data;
  if (!(d instanceof Float32Array)) throw new Error(`${what} must be float32, got ${t.dtype}`);
  return d;
}

/** A new leaf float32 buffer of `shape`, a copy of `src` or filled with `fill`. */
export function newBuffer(shape: readonly number[], src?: ArrayLike<number>, fill = 0): Tensor {
  const n = shape.reduce((a, d) => a * d, 1);
  const data = new Float32Array(n);
  if (src) for (let i = 0; i < n; i++) data[i] = src[i];
  else if (fill !== 0) data.fill(fill);
  return new Tensor({ data, version: 0 }, [...shape], 'float32');
}

/** The gradient of `p` as a Float32Array; checks that it matches the parameter's size. */
export function gradData(opt: string, p: Tensor, g: Tensor): Float32Array {
  if (g.numel() !== p.numel()) {
    throw new Error(`${opt}: the gradient has shape ${fmtShape(g.shape)} but the parameter has shape ${fmtShape(p.shape)}`);
  }
  return f32(g, `${opt}: the gradient`);
}

/** Marks tensors as written in place (autograd's version counters). */
export function bump(...ts: (Tensor | null)[]): void {
  for (const t of ts) if (t) t._storage.version++;
}

/** Throws unless `v` is a finite number >= 0 (with an optional exclusive upper bound). */
export function checkRange(opt: string, name: string, v: number, max?: number): void {
  if (!(Number.isFinite(v) && v >= 0 && (max === undefined || v < max))) {
    throw new Error(`${opt}: invalid ${name} ${v} (expected a number >= 0${max === undefined ? '' : ` and < ${max}`})`);
  }
}
