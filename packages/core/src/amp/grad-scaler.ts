// GradScaler (torch.cuda.amp.GradScaler, PyTorch 1.13): loss scaling for reduced-precision
// training. Invariant: per optimizer, a step goes READY → (unscale_) UNSCALED → (step) STEPPED,
// and update() returns every optimizer to READY; a step whose gradients hold an inf or NaN
// (after unscaling) is skipped, and update() then multiplies the scale by backoffFactor;
// growthInterval consecutive clean steps multiply it by growthFactor. The scale is a float32
// value, as PyTorch's scale tensor, so the sequence of scales is PyTorch's bit for bit.

import { noGrad } from '../autograd/grad-mode.js';
import { Tensor } from '../tensor.js';
import { mul } from '../ops/elementwise.js';
import type { Optimizer } from '../optim/optimizer.js';
import { DeviceError, scalarTensorGpu } from '../device.js';
import { unscaleGpu } from '../optim/gpu-steps.js';

/** Unscales CPU gradients in place; whether any is inf/NaN. */
function unscaleCpu(grads: readonly Tensor[], inv: number): boolean {
  let found = false;
  noGrad(() => {
    for (const g of grads) {
      const d = g.data as Float32Array;
      for (let i = 0; i < d.length; i++) {
        if (!Number.isFinite(d[i])) found = true;
        d[i] = d[i] * inv;
      }
    }
  });
  return found;
}

export interface GradScalerOptions {
  /** The first scale (default 2**16). */
  initScale?: number;
  /** Multiplies the scale after growthInterval clean steps (default 2). */
  growthFactor?: number;
  /** Multiplies the scale after a step with inf/NaN gradients (default 0.5). */
  backoffFactor?: number;
  /** Clean steps between growths (default 2000). */
  growthInterval?: number;
  /** false: every method passes through (scale returns its input, step calls optimizer.step()). */
  enabled?: boolean;
}

/** PyTorch's GradScaler.state_dict() keys. */
export interface GradScalerStateDict {
  scale: number;
  growth_factor: number;
  backoff_factor: number;
  growth_interval: number;
  _growth_tracker: number;
}

type Stage = 'ready' | 'unscaled' | 'stepped';
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyOptimizer = Optimizer<any, any>;

/** Scaled outputs: a tensor, or arrays of them (as PyTorch scales iterables). */
export type Scalable = Tensor | readonly Scalable[];

/**
 * Loss scaling with PyTorch's semantics.
 *
 * @example
 * const scaler = new amp.GradScaler();
 * const loss = amp.autocast(() => F.crossEntropy(model.forward(x), y));
 * scaler.scale(loss).backward();
 * scaler.step(opt);   // unscales, skips the step on inf/NaN
 * scaler.update();    // backoff ×0.5 after a skipped step, growth ×2 after 2000 clean ones
 */
export class GradScaler {
  private scaleValue: number | null = null;
  private growthTracker = 0;
  private initScale: number;
  private growthFactor: number;
  private backoffFactor: number;
  private growthInterval: number;
  private readonly enabled: boolean;
  private readonly perOptimizer = new Map<AnyOptimizer, { stage: Stage; foundInf: boolean | null }>();

  constructor(opts: GradScalerOptions = {}) {
    this.initScale = opts.initScale ?? 2 ** 16;
    this.growthFactor = opts.growthFactor ?? 2;
    this.backoffFactor = opts.backoffFactor ?? 0.5;
    this.growthInterval = opts.growthInterval ?? 2000;
    this.enabled = opts.enabled ?? true;
    if (!(this.growthFactor > 1)) throw new Error(`GradScaler: growthFactor must be > 1, got ${this.growthFactor}`);
    if (!(this.backoffFactor < 1 && this.backoffFactor > 0)) throw new Error(`GradScaler: backoffFactor must be in (0, 1), got ${this.backoffFactor}`);
    if (!Number.isInteger(this.growthInterval) || this.growthInterval <= 0) throw new Error(`GradScaler: growthInterval must be a positive integer, got ${this.growthInterval}`);
    if (!(this.initScale > 0) || !Number.isFinite(this.initScale)) throw new Error(`GradScaler: initScale must be a positive finite number, got ${this.initScale}`);
  }

  isEnabled(): boolean { return this.enabled; }

  /** `outputs` multiplied by the current scale (the first call fixes the scale at initScale). */
  scale<T extends Scalable>(outputs: T): T {
    if (!this.enabled) return outputs;
    if (this.scaleValue === null) this.scaleValue = Math.fround(this.initScale);
    const s = this.scaleValue;
    const apply = (o: Scalable): Scalable => {
      if (o instanceof Tensor) return mul(o, o.device === 'webgpu' ? scalarTensorGpu(s, 'float32') : Tensor._scalar(s, 'float32'));
      if (Array.isArray(o)) return o.map(apply);
      throw new Error('GradScaler.scale: outputs must be a Tensor or an array of Tensors');
    };
    return apply(outputs) as T;
  }

  /**
   * Divides the optimizer's gradients by the scale, in place, and records whether any is inf/NaN.
   * Call it before clipping gradients; at most once per optimizer between update() calls.
   */
  unscale_(optimizer: AnyOptimizer): void {
    if (!this.enabled) return;
    const { st, inv, grads } = this.beginUnscale(optimizer, 'unscale_');
    if (grads.some((g) => g.device === 'webgpu')) {
      throw new DeviceError("GradScaler.unscale_: the gradients live on 'webgpu', and checking them for inf/NaN waits for the GPU: use `await scaler.unscaleAsync_(optimizer)` / `await scaler.stepAsync(optimizer)`");
    }
    st.foundInf = grads.length > 0 ? unscaleCpu(grads, inv) : null;
    st.stage = 'unscaled';
  }

  /**
   * unscale_ for gradients on any device: on 'webgpu' the unscaling and the inf/NaN check run as
   * one kernel per gradient, and the check's flag is the one value read back (one map).
   */
  async unscaleAsync_(optimizer: AnyOptimizer): Promise<void> {
    if (!this.enabled) return;
    const { st, inv, grads } = this.beginUnscale(optimizer, 'unscaleAsync_');
    const onGpu = grads.filter((g) => g.device === 'webgpu');
    let found = unscaleCpu(grads.filter((g) => g.device !== 'webgpu'), inv);
    if (onGpu.length) found = (await unscaleGpu(onGpu, inv)) || found;
    st.foundInf = grads.length > 0 ? found : null;
    st.stage = 'unscaled';
  }

  /** The checks before unscaling, PyTorch's inverse scale, and the gradients to unscale. */
  private beginUnscale(optimizer: AnyOptimizer, where: string): { st: { stage: Stage; foundInf: boolean | null }; inv: number; grads: Tensor[] } {
    const st = this.stateOf(optimizer);
    if (st.stage === 'unscaled') throw new Error(`GradScaler.${where}: unscale_() has already been called on this optimizer since the last update()`);
    if (st.stage === 'stepped') throw new Error(`GradScaler.${where}: unscale_() is being called after step()`);
    const s = this.requireScale(where);
    const grads: Tensor[] = [];
    for (const g of optimizer.paramGroups) {
      for (const p of g.params) {
        const gr = p._grad; // not handed out: zeroGrad() may still free it
        if (!gr) continue;
        if (gr.dtype !== 'float32') throw new Error(`GradScaler.${where}: attempting to unscale ${gr.dtype} gradients; keep parameters float32 (PyTorch refuses FP16 gradients too)`);
        grads.push(gr);
      }
    }
    // PyTorch: inv_scale = scale.double().reciprocal().float(); grads *= inv_scale in float32.
    return { st, inv: Math.fround(1 / s), grads };
  }

  /**
   * Unscales (unless unscale_ was called), then runs `optimizer.step()` unless a gradient is
   * inf/NaN. Returns what optimizer.step returned, or undefined for a skipped step.
   */
  step(optimizer: AnyOptimizer, closure?: () => Tensor | number): Tensor | number | undefined {
    if (!this.enabled) return optimizer.step(closure);
    if (closure) throw new Error('GradScaler.step: closure use is not supported (as in PyTorch)');
    const st = this.stateOf(optimizer);
    if (st.stage === 'stepped') throw new Error('GradScaler.step: step() has already been called since the last update()');
    if (st.stage === 'ready') this.unscale_(optimizer);
    return this.finishStep(optimizer, st);
  }

  /**
   * step() for gradients on any device (on 'webgpu': one read per step, the inf/NaN flag; the
   * optimizer's update itself is recorded, not waited for).
   * @example await scaler.stepAsync(opt); scaler.update();
   */
  async stepAsync(optimizer: AnyOptimizer): Promise<Tensor | number | undefined> {
    if (!this.enabled) return optimizer.step();
    const st = this.stateOf(optimizer);
    if (st.stage === 'stepped') throw new Error('GradScaler.stepAsync: step() has already been called since the last update()');
    if (st.stage === 'ready') await this.unscaleAsync_(optimizer);
    return this.finishStep(optimizer, st);
  }

  private finishStep(optimizer: AnyOptimizer, st: { stage: Stage; foundInf: boolean | null }): Tensor | number | undefined {
    if (st.foundInf === null) throw new Error('GradScaler.step: no inf checks were recorded for this optimizer (no parameter has a gradient: call backward() on the scaled loss first)');
    const out = st.foundInf ? undefined : optimizer.step();
    st.stage = 'stepped';
    return out;
  }

  /**
   * Updates the scale from this iteration's inf checks (or sets it to `newScale`), and makes
   * every optimizer ready for the next iteration.
   */
  update(newScale?: number | Tensor): void {
    if (!this.enabled) return;
    const s = this.requireScale('update');
    if (newScale !== undefined) {
      const v = newScale instanceof Tensor ? newScale.item() : newScale;
      if (!(v > 0)) throw new Error(`GradScaler.update: newScale must be positive, got ${v}`);
      this.scaleValue = Math.fround(v);
    } else {
      const checks = [...this.perOptimizer.values()].filter((x) => x.foundInf !== null);
      if (checks.length === 0) throw new Error('GradScaler.update: no inf checks were recorded prior to update(); call step(optimizer) first');
      if (checks.some((x) => x.foundInf)) {
        this.scaleValue = Math.fround(s * this.backoffFactor);
        this.growthTracker = 0;
      } else if (this.growthTracker + 1 === this.growthInterval) {
        const grown = Math.fround(s * this.growthFactor);
        if (Number.isFinite(grown)) this.scaleValue = grown;
        this.growthTracker = 0;
      } else {
        this.growthTracker++;
      }
    }
    this.perOptimizer.clear();
  }

  /** The current scale (initScale before the first scale() call; 1 when disabled). */
  getScale(): number { return this.enabled ? (this.scaleValue ?? this.initScale) : 1; }
  getGrowthFactor(): number { return this.growthFactor; }
  setGrowthFactor(v: number): void { this.growthFactor = v; }
  getBackoffFactor(): number { return this.backoffFactor; }
  setBackoffFactor(v: number): void { this.backoffFactor = v; }
  getGrowthInterval(): number { return this.growthInterval; }
  setGrowthInterval(v: number): void { this.growthInterval = v; }

  /** PyTorch's state_dict: scale, factors, interval and the growth tracker (empty when disabled). */
  stateDict(): GradScalerStateDict | Record<string, never> {
    if (!this.enabled) return {};
    return {
      scale: this.getScale(), growth_factor: this.growthFactor, backoff_factor: this.backoffFactor,
      growth_interval: this.growthInterval, _growth_tracker: this.growthTracker,
    };
  }

  loadStateDict(sd: GradScalerStateDict | Record<string, never>): void {
    if (!this.enabled) return;
    if (!('scale' in sd)) throw new Error('GradScaler.loadStateDict: the state dict is empty (it came from a disabled GradScaler)');
    this.initScale = sd.scale;
    if (this.scaleValue !== null) this.scaleValue = Math.fround(sd.scale);
    this.growthFactor = sd.growth_factor;
    this.backoffFactor = sd.backoff_factor;
    this.growthInterval = sd.growth_interval;
    this.growthTracker = sd._growth_tracker;
  }

  private requireScale(where: string): number {
    if (this.scaleValue === null) throw new Error(`GradScaler.${where}: the scale is not set yet; call scaler.scale(loss) first`);
    return this.scaleValue;
  }

  private stateOf(opt: AnyOptimizer): { stage: Stage; foundInf: boolean | null } {
    let st = this.perOptimizer.get(opt);
    if (!st) this.perOptimizer.set(opt, (st = { stage: 'ready', foundInf: null }));
    return st;
  }
}
