// nn.Module and nn.Parameter. Invariant: a module's state is exactly its own enumerable fields
// (in declaration order, `Object.keys(this)`) that hold a Module or a Tensor — nothing is kept in
// side tables except the kind overrides made by registerBuffer/registerParameter and the set of
// non-persistent buffers. A field holding a Module is a child; a Tensor field is a parameter when
// it is an `nn.Parameter` or a leaf that requires grad, and a buffer otherwise. This keeps the
// module readable by the compiler through plain reflection (field names, children, parameters,
// the `training` flag, the class's method source), with nothing Kiln-specific to learn.

import { fmtShape } from '@kiln/ir-spec';
import { Tensor } from '../tensor.js';
import { checkDeviceName, type DeviceName } from '../device.js';
import { noGrad } from '../autograd/grad-mode.js';
import { keep } from '../lifetime.js';
import { loadSafetensors } from '../safetensors.js';
import { noteModuleClass } from './module-scope.js';

/**
 * A tensor that is a module parameter. It shares the storage of the tensor it wraps (like
 * `torch.nn.Parameter`) and is a leaf that requires grad unless `requiresGrad` is false.
 * @example this.weight = new nn.Parameter(randn([10, 5]));
 */
export class Parameter extends Tensor {
  constructor(data: Tensor, requiresGrad = true) {
    super(data._storage, data.shape, data.dtype);
    keep(this); // a model's parameter outlives any tidy() it was made in (as tfjs's variables)
    if (requiresGrad) this.requiresGrad_(true);
  }
  override toString(): string { return `Parameter containing:\n${super.toString()}`; }
}

/** A state dict: dotted names (PyTorch's keys) to tensors. */
export type StateDict = Record<string, Tensor>;

/** What loadStateDict found (as PyTorch's `_IncompatibleKeys`). */
export interface LoadResult { missingKeys: string[]; unexpectedKeys: string[] }

type Kind = 'parameter' | 'buffer';

/**
 * Base class of all layers and models (torch.nn.Module). Subclasses declare submodules,
 * parameters and buffers as ordinary fields and implement `forward`.
 * @example
 * class Net extends nn.Module {
 *   fc = new nn.Linear(4, 2);
 *   forward(x: Tensor): Tensor { return this.fc.forward(x).relu(); }
 * }
 */
export abstract class Module {
  /** Training mode (dropout active, batch norm uses batch statistics); see train()/eval(). */
  training = true;
  // Kinds forced by registerBuffer/registerParameter (they win over the field-type rule).
  #kinds = new Map<string, Kind>();
  #nonPersistent = new Set<string>();

  constructor() {
    noteModuleClass(new.target); // so a profiler can see module calls (module-scope.ts)
  }

  /** Computes the module's output. PyTorch's `module(x)` is `module.forward(x)` here. */
  // The base signature is deliberately untyped, like PyTorch's: each layer narrows it.
  abstract forward(...args: any[]): any;

  /** Names of the own fields to inspect, in order. ModuleDict overrides it to keep insertion
   * order for keys that look like integers (which `Object.keys` would sort first). */
  protected memberNames(): string[] { return Object.keys(this); }

  /** This module's own (non-recursive) parameters, buffers and children, in field order. */
  #own(): { params: [string, Tensor][]; buffers: [string, Tensor][]; modules: [string, Module][] } {
    const params: [string, Tensor][] = [], buffers: [string, Tensor][] = [], modules: [string, Module][] = [];
    for (const name of this.memberNames()) {
      const v: unknown = Reflect.get(this, name);
      if (v instanceof Module) modules.push([name, v]);
      else if (v instanceof Tensor) {
        const kind = this.#kinds.get(name) ?? (v instanceof Parameter || (v.isLeaf && v.requiresGrad) ? 'parameter' : 'buffer');
        (kind === 'parameter' ? params : buffers).push([name, v]);
      }
    }
    return { params, buffers, modules };
  }

  // ---- registration ---------------------------------------------------------------------------

  #checkName(what: string, name: string): void {
    if (typeof name !== 'string' || name === '') throw new Error(`${what}: the name must be a non-empty string`);
    if (name.includes('.')) throw new Error(`${what}: name '${name}' must not contain '.' (dots separate submodule names in state dict keys)`);
    if (name in this && !Object.prototype.hasOwnProperty.call(this, name)) {
      throw new Error(`${what}: '${name}' is already a member of ${this.constructor.name} (a method or accessor); choose another name`);
    }
    const cur: unknown = Reflect.get(this, name);
    if (cur !== undefined && cur !== null && !(cur instanceof Tensor) && !(cur instanceof Module)) {
      throw new Error(`${what}: '${name}' is already an attribute of ${this.constructor.name} holding a ${typeof cur}; choose another name`);
    }
  }
  #define(name: string, value: unknown): void {
    // An own, enumerable data property: keeps the position of an existing field, else appends.
    Object.defineProperty(this, name, { value, writable: true, enumerable: true, configurable: true });
  }

  /** Adds a buffer: state that is not trained (running statistics). Non-persistent buffers
   * are left out of stateDict(). `null` declares the name with no tensor yet. */
  registerBuffer(name: string, t: Tensor | null, opts: { persistent?: boolean } = {}): void {
    this.#checkName('registerBuffer', name);
    if (t !== null && !(t instanceof Tensor)) throw new Error(`registerBuffer('${name}'): expected a Tensor or null`);
    if (t) keep(t); // module state outlives any tidy() it was made in
    this.#define(name, t);
    this.#kinds.set(name, 'buffer');
    if (opts.persistent === false) this.#nonPersistent.add(name);
    else this.#nonPersistent.delete(name);
  }

  /** Adds a parameter under `name` (any Tensor; it is a parameter whatever its requiresGrad). */
  registerParameter(name: string, p: Tensor | null): void {
    this.#checkName('registerParameter', name);
    if (p !== null && !(p instanceof Tensor)) throw new Error(`registerParameter('${name}'): expected a Tensor (e.g. new nn.Parameter(t)) or null`);
    this.#define(name, p);
    this.#kinds.set(name, 'parameter');
    this.#nonPersistent.delete(name);
  }

  /** Adds a child module under `name` (as a field would). */
  addModule(name: string, m: Module | null): void {
    this.#checkName('addModule', name);
    if (m !== null && !(m instanceof Module)) throw new Error(`addModule('${name}'): expected an nn.Module or null`);
    this.#define(name, m);
    this.#kinds.delete(name);
  }
  /** Same as addModule. */
  registerModule(name: string, m: Module | null): void { this.addModule(name, m); }

  // ---- traversal ------------------------------------------------------------------------------

  /** Direct children with their field names (each module once). */
  namedChildren(): [string, Module][] {
    const seen = new Set<Module>();
    return this.#own().modules.filter(([, m]) => (seen.has(m) ? false : (seen.add(m), true)));
  }
  children(): Module[] { return this.namedChildren().map(([, m]) => m); }

  /** This module and all descendants, depth first, with dotted names ('' for this one). */
  namedModules(prefix = ''): [string, Module][] {
    const out: [string, Module][] = [];
    const seen = new Set<Module>();
    const walk = (m: Module, p: string) => {
      if (seen.has(m)) return;
      seen.add(m);
      out.push([p, m]);
      for (const [n, c] of m.#own().modules) walk(c, p ? `${p}.${n}` : n);
    };
    walk(this, prefix);
    return out;
  }
  modules(): Module[] { return this.namedModules().map(([, m]) => m); }

  #namedTensors(kind: 'params' | 'buffers', recurse: boolean): [string, Tensor][] {
    const out: [string, Tensor][] = [];
    const seen = new Set<Tensor>();
    const mods: [string, Module][] = recurse ? this.namedModules() : [['', this]];
    for (const [p, m] of mods) {
      for (const [n, t] of m.#own()[kind]) {
        if (seen.has(t)) continue; // shared (tied) tensors are listed once, as in PyTorch
        seen.add(t);
        out.push([p ? `${p}.${n}` : n, t]);
      }
    }
    return out;
  }
  /** Parameters with dotted names, each tensor once (tied weights appear under their first name). */
  namedParameters(opts: { recurse?: boolean } = {}): [string, Tensor][] { return this.#namedTensors('params', opts.recurse ?? true); }
  /** All parameters (what an optimizer takes). */
  parameters(opts: { recurse?: boolean } = {}): Tensor[] { return this.namedParameters(opts).map(([, t]) => t); }
  namedBuffers(opts: { recurse?: boolean } = {}): [string, Tensor][] { return this.#namedTensors('buffers', opts.recurse ?? true); }
  buffers(opts: { recurse?: boolean } = {}): Tensor[] { return this.namedBuffers(opts).map(([, t]) => t); }

  /** The submodule at a dotted path ('' is this module). */
  getSubmodule(target: string): Module {
    if (target === '') return this;
    let m: Module = this;
    for (const part of target.split('.')) {
      const next: unknown = Object.prototype.hasOwnProperty.call(m, part) ? Reflect.get(m, part) : undefined;
      if (!(next instanceof Module)) throw new Error(`getSubmodule('${target}'): ${m.constructor.name} has no submodule '${part}'`);
      m = next;
    }
    return m;
  }
  #getTensor(what: 'params' | 'buffers', target: string): Tensor {
    const i = target.lastIndexOf('.');
    const owner = this.getSubmodule(i < 0 ? '' : target.slice(0, i));
    const name = target.slice(i + 1);
    const hit = owner.#own()[what].find(([n]) => n === name);
    if (!hit) throw new Error(`${what === 'params' ? 'getParameter' : 'getBuffer'}('${target}'): ${owner.constructor.name} has no ${what === 'params' ? 'parameter' : 'buffer'} '${name}'`);
    return hit[1];
  }
  /** The parameter at a dotted path, e.g. 'features.0.weight'. */
  getParameter(target: string): Tensor { return this.#getTensor('params', target); }
  /** The buffer at a dotted path, e.g. 'features.1.running_mean'. */
  getBuffer(target: string): Tensor { return this.#getTensor('buffers', target); }

  /** Calls `fn` on every submodule (children first) and then on this module. */
  apply(fn: (m: Module) => void): this {
    for (const c of this.children()) c.apply(fn);
    fn(this);
    return this;
  }

  // ---- modes and gradients ----------------------------------------------------------------------

  /** Sets training mode on this module and all descendants; returns this. */
  train(mode = true): this {
    this.training = mode;
    for (const c of this.children()) c.train(mode);
    return this;
  }
  /** Evaluation mode: same as train(false). */
  eval(): this { return this.train(false); }

  /** Drops (default) or zeroes the gradients of all parameters. */
  zeroGrad(opts: { setToNone?: boolean } = {}): void {
    for (const p of this.parameters()) {
      if (!p._grad) continue;
      if (opts.setToNone ?? true) p.zeroGrad(); // frees a gradient nobody was handed (Tensor.zeroGrad)
      else {
        const g = p._grad;
        noGrad(() => g.zero_());
      }
    }
  }
  /**
   * Moves every parameter and buffer (and gradient) to `device`, in place: the Parameter objects
   * stay the same, so build the optimizer after (or before: its state is made at the first step).
   * From 'webgpu' back to 'cpu' waits for the GPU: use toAsync.
   * @example await initWebGpu(); model.to('webgpu');
   */
  to(device: DeviceName): this {
    checkDeviceName(device, 'Module.to');
    for (const t of [...this.parameters(), ...this.buffers()]) {
      if (t.device === device) continue;
      const moved = t._toDevice(device);
      t._replaceStorage(moved._storage);
      moved.dispose(); // the parameter holds the storage now
      if (t.grad) t.grad = t.grad.detach()._toDevice(device);
    }
    return this;
  }
  /** Module.to for any direction; from 'webgpu' to 'cpu' it waits for the GPU. */
  async toAsync(device: DeviceName): Promise<this> {
    checkDeviceName(device, 'Module.toAsync');
    for (const t of [...this.parameters(), ...this.buffers()]) {
      if (t.device === device) continue;
      const moved = await t.detach().toAsync(device);
      t._replaceStorage(moved._storage);
      moved.dispose();
      if (t.grad) t.grad = await t.grad.detach().toAsync(device);
    }
    return this;
  }

  /** Sets requiresGrad on every parameter (freezing / unfreezing); returns this. */
  requiresGrad_(on = true): this {
    for (const p of this.parameters()) p.requiresGrad_(on);
    return this;
  }

  // ---- state dict -----------------------------------------------------------------------------

  /**
   * Parameters and persistent buffers under PyTorch's dotted keys: per module its parameters,
   * then its buffers, then each child's entries (`features.0.weight`, `features.1.running_mean`).
   * Values are detached views sharing storage with the module's tensors (`keepVars` gives the
   * tensors themselves).
   */
  stateDict(opts: { prefix?: string; keepVars?: boolean } = {}): StateDict {
    const out: StateDict = {};
    this.#collectState(out, opts.prefix ?? '', opts.keepVars ?? false, new Set());
    return out;
  }
  #collectState(out: StateDict, prefix: string, keepVars: boolean, seen: Set<Module>): void {
    // A module reached twice (shared submodule) still contributes both key sets, as in PyTorch;
    // `seen` only guards against cycles.
    if (seen.has(this)) return;
    seen.add(this);
    const own = this.#own();
    for (const [n, t] of own.params) out[prefix + n] = keepVars ? t : t.detach();
    for (const [n, t] of own.buffers) if (!this.#nonPersistent.has(n)) out[prefix + n] = keepVars ? t : t.detach();
    for (const [n, m] of own.modules) m.#collectState(out, `${prefix}${n}.`, keepVars, seen);
    seen.delete(this);
  }

  /**
   * Copies a state dict into this module's tensors (in place, under noGrad). Nothing is copied
   * unless every check passes. Shape mismatches are always errors; with `strict` (default),
   * missing and unexpected keys are too, all reported in one error.
   */
  loadStateDict(sd: StateDict, opts: { strict?: boolean } = {}): LoadResult {
    const strict = opts.strict ?? true;
    const targets = this.stateDict({ keepVars: true });
    const missingKeys = Object.keys(targets).filter((k) => !Object.prototype.hasOwnProperty.call(sd, k));
    const unexpectedKeys = Object.keys(sd).filter((k) => !Object.prototype.hasOwnProperty.call(targets, k));
    const problems: string[] = [];
    const pairs: [Tensor, Tensor][] = [];
    for (const [k, dst] of Object.entries(targets)) {
      if (!Object.prototype.hasOwnProperty.call(sd, k)) continue;
      const src: unknown = sd[k];
      if (!(src instanceof Tensor)) { problems.push(`value for ${k} is not a Tensor`); continue; }
      if (src.shape.length !== dst.shape.length || src.shape.some((d, i) => d !== dst.shape[i])) {
        problems.push(`size mismatch for ${k}: copying a tensor with shape ${fmtShape(src.shape)} from the state dict, the shape in the current model is ${fmtShape(dst.shape)}`);
        continue;
      }
      pairs.push([dst, src]);
    }
    const msgs: string[] = [];
    if (strict && unexpectedKeys.length) msgs.push(`Unexpected key(s) in state dict: ${unexpectedKeys.map((k) => `"${k}"`).join(', ')}.`);
    if (strict && missingKeys.length) msgs.push(`Missing key(s) in state dict: ${missingKeys.map((k) => `"${k}"`).join(', ')}.`);
    msgs.push(...problems.map((p) => `${p}.`));
    if (msgs.length) {
      const hint = problems.length ? '' : '\n\tPass { strict: false } to load the matching keys only.';
      throw new Error(`loadStateDict: error(s) in loading state dict for ${this.constructor.name}:\n\t${msgs.join('\n\t')}${hint}`);
    }
    noGrad(() => { for (const [dst, src] of pairs) dst.copy_(src); });
    return { missingKeys, unexpectedKeys };
  }

  /**
   * Loads a safetensors file (e.g. PyTorch's `save_file(model.state_dict(), path)`) through
   * loadStateDict: F16/BF16 tensors are cast to the parameters' dtype (float32) and I64 to int32 on the way.
   * @example model.loadSafetensors(readFileSync('model.safetensors'));
   */
  loadSafetensors(bytes: Uint8Array | ArrayBuffer, opts: { strict?: boolean } = {}): LoadResult {
    return this.loadStateDict(loadSafetensors(bytes), opts);
  }

  // ---- printing -------------------------------------------------------------------------------

  /** The text inside the parentheses of this module's repr (its constructor arguments). */
  extraRepr(): string { return ''; }

  /** PyTorch's module repr: `Net(\n  (fc): Linear(in_features=4, out_features=2, bias=True)\n)`. */
  toString(): string {
    const extra = this.extraRepr();
    const extraLines = extra ? extra.split('\n') : [];
    const childLines = this.#own().modules.map(([n, m]) => `(${n}): ${m.toString().split('\n').join('\n  ')}`);
    const lines = [...extraLines, ...childLines];
    let body = '';
    if (extraLines.length === 1 && childLines.length === 0) body = extraLines[0];
    else if (lines.length) body = `\n  ${lines.join('\n  ')}\n`;
    return `${this.constructor.name}(${body})`;
  }
}

// ---- helpers for layer reprs (Python literal style, as PyTorch prints them) ---------------------

/** `True`/`False`. */
export const pyBool = (b: boolean): string => (b ? 'True' : 'False');
/** A number, a tuple `(3, 3)` or a string `'same'`, as Python prints it. */
export function pyVal(v: number | string | readonly number[] | null | undefined): string {
  if (v === null || v === undefined) return 'None';
  if (typeof v === 'string') return `'${v}'`;
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : pyFloat(v);
  return v.length === 1 ? `(${v[0]},)` : `(${v.join(', ')})`;
}
/** A float as Python's repr prints it (`0.1`, `1e-05`, `1.0`, `1e+16`). */
export function pyFloat(v: number): string {
  if (!Number.isFinite(v)) return Number.isNaN(v) ? 'nan' : v > 0 ? 'inf' : '-inf';
  if (v === 0) return Object.is(v, -0) ? '-0.0' : '0.0';
  // Shortest round-trip digits, then Python's layout: fixed for 1e-4 <= |v| < 1e16, else d.ddde±XX.
  const [mant, e] = v.toExponential().split('e');
  const exp = Number(e);
  if (exp >= -4 && exp < 16) {
    const s = String(v);
    return s.includes('.') ? s : `${s}.0`;
  }
  return `${mant}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
}
