// optim.lrScheduler: learning-rate schedules (torch.optim.lr_scheduler of PyTorch 1.13):
// StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR, LinearLR, LambdaLR, OneCycleLR,
// SequentialLR and ReduceLROnPlateau. Invariant: each schedule computes PyTorch's formula in
// PyTorch's order of float64 operations (the recursive "chainable" form where PyTorch uses it,
// the closed form where it does), so the lr sequences are PyTorch's to the last bit; a
// scheduler writes `lr` (and OneCycleLR `momentum`/`betas`) into the optimizer's param groups
// and records each group's starting lr as `initialLr` (PyTorch's 'initial_lr').

/** What a scheduler needs of an optimizer: its param groups with an `lr` (any Kiln optimizer). */
export interface SchedulableOptimizer {
  readonly paramGroups: readonly object[];
  readonly defaults: object;
}

type Group = Record<string, unknown> & { lr: number; initialLr?: number };

const groupsOf = (opt: SchedulableOptimizer): Group[] => opt.paramGroups as unknown as Group[];
/** Python's modulo (the sign of the divisor). */
const pyMod = (a: number, b: number): number => ((a % b) + b) % b;

/** A JSON-able snapshot of a scheduler (its numeric state; functions are left out). */
export type SchedulerStateDict = Record<string, unknown>;

/**
 * Base of the epoch-driven schedules (PyTorch's _LRScheduler). Construction performs the
 * initial step (lastEpoch becomes 0 and the groups get the schedule's first lr).
 */
export abstract class LRScheduler {
  lastEpoch: number;
  baseLrs: number[];
  protected stepCount = 0;
  protected lastLr: number[] = [];

  constructor(readonly optimizer: SchedulableOptimizer, lastEpoch = -1) {
    const groups = groupsOf(optimizer);
    if (lastEpoch === -1) {
      for (const g of groups) if (g.initialLr === undefined) g.initialLr = g.lr;
    } else {
      groups.forEach((g, i) => {
        if (g.initialLr === undefined) throw new Error(`${this.constructor.name}: param group ${i} has no initialLr; resuming (lastEpoch != -1) needs a scheduler to have run on this optimizer`);
      });
    }
    this.baseLrs = groups.map((g) => g.initialLr as number);
    this.lastEpoch = lastEpoch;
  }

  /** Resets the step count and performs a step (PyTorch's _initial_step): called at the end of
   * each subclass constructor, and by SequentialLR for its first scheduler. */
  initialStep(): void {
    this.stepCount = 0;
    this.step();
  }

  /** The lrs for the current lastEpoch (the chainable form reads the groups' current lr). */
  protected abstract getLr(): number[];
  /** The closed form at lastEpoch, used by step(epoch) where PyTorch has one. */
  protected closedFormLr(): number[] | null { return null; }

  /** Advances one epoch (or jumps to `epoch`, PyTorch's deprecated form) and sets the groups' lr. */
  step(epoch?: number): void {
    this.stepCount++;
    let values: number[];
    if (epoch === undefined) {
      this.lastEpoch++;
      values = this.getLr();
    } else {
      this.lastEpoch = epoch;
      values = this.closedFormLr() ?? this.getLr();
    }
    groupsOf(this.optimizer).forEach((g, i) => { g.lr = values[i]; });
    this.lastLr = groupsOf(this.optimizer).map((g) => g.lr);
  }

  /** The lrs the last step set, one per group. */
  getLastLr(): number[] { return [...this.lastLr]; }

  /** The scheduler's state (everything but the optimizer and functions), as PyTorch's state_dict. */
  stateDict(): SchedulerStateDict {
    const out: SchedulerStateDict = {};
    for (const [k, v] of Object.entries(this)) {
      if (k === 'optimizer' || typeof v === 'function') continue;
      out[k] = structuredClone(v);
    }
    return out;
  }
  /** Restores a stateDict() (of the same kind of scheduler). */
  loadStateDict(sd: SchedulerStateDict): void {
    for (const [k, v] of Object.entries(sd)) {
      if (!Object.prototype.hasOwnProperty.call(this, k)) throw new Error(`${this.constructor.name}.loadStateDict: unknown key '${k}'`);
      Reflect.set(this, k, structuredClone(v));
    }
  }
}

/** lr · gamma every stepSize epochs. @example new optim.lrScheduler.StepLR(opt, { stepSize: 30, gamma: 0.1 }) */
export class StepLR extends LRScheduler {
  readonly stepSize: number;
  readonly gamma: number;
  constructor(optimizer: SchedulableOptimizer, opts: { stepSize: number; gamma?: number; lastEpoch?: number }) {
    super(optimizer, opts.lastEpoch);
    if (!(Number.isInteger(opts.stepSize) && opts.stepSize > 0)) throw new Error(`StepLR: stepSize must be an integer > 0, got ${opts.stepSize}`);
    this.stepSize = opts.stepSize;
    this.gamma = opts.gamma ?? 0.1;
    this.initialStep();
  }
  protected getLr(): number[] {
    const gs = groupsOf(this.optimizer);
    if (this.lastEpoch === 0 || this.lastEpoch % this.stepSize !== 0) return gs.map((g) => g.lr);
    return gs.map((g) => g.lr * this.gamma);
  }
  protected override closedFormLr(): number[] {
    return this.baseLrs.map((b) => b * this.gamma ** Math.floor(this.lastEpoch / this.stepSize));
  }
}

/** lr · gamma at each milestone epoch. @example new optim.lrScheduler.MultiStepLR(opt, { milestones: [30, 80] }) */
export class MultiStepLR extends LRScheduler {
  readonly milestones: number[];
  readonly gamma: number;
  constructor(optimizer: SchedulableOptimizer, opts: { milestones: readonly number[]; gamma?: number; lastEpoch?: number }) {
    super(optimizer, opts.lastEpoch);
    this.milestones = [...opts.milestones].sort((a, b) => a - b);
    this.gamma = opts.gamma ?? 0.1;
    this.initialStep();
  }
  protected getLr(): number[] {
    const gs = groupsOf(this.optimizer);
    const hits = this.milestones.filter((m) => m === this.lastEpoch).length;
    if (hits === 0) return gs.map((g) => g.lr);
    return gs.map((g) => g.lr * this.gamma ** hits);
  }
  protected override closedFormLr(): number[] {
    const passed = this.milestones.filter((m) => m <= this.lastEpoch).length;
    return this.baseLrs.map((b) => b * this.gamma ** passed);
  }
}

/** lr · gamma every epoch. */
export class ExponentialLR extends LRScheduler {
  readonly gamma: number;
  constructor(optimizer: SchedulableOptimizer, opts: { gamma: number; lastEpoch?: number }) {
    super(optimizer, opts.lastEpoch);
    this.gamma = opts.gamma;
    this.initialStep();
  }
  protected getLr(): number[] {
    const gs = groupsOf(this.optimizer);
    if (this.lastEpoch === 0) return gs.map((g) => g.lr);
    return gs.map((g) => g.lr * this.gamma);
  }
  protected override closedFormLr(): number[] { return this.baseLrs.map((b) => b * this.gamma ** this.lastEpoch); }
}

/** Cosine from the base lr down to etaMin over tMax epochs (and back up, periodically, as PyTorch's recursive form). */
export class CosineAnnealingLR extends LRScheduler {
  readonly tMax: number;
  readonly etaMin: number;
  constructor(optimizer: SchedulableOptimizer, opts: { tMax: number; etaMin?: number; lastEpoch?: number }) {
    super(optimizer, opts.lastEpoch);
    if (!(opts.tMax > 0)) throw new Error(`CosineAnnealingLR: tMax must be > 0, got ${opts.tMax}`);
    this.tMax = opts.tMax;
    this.etaMin = opts.etaMin ?? 0;
    this.initialStep();
  }
  protected getLr(): number[] {
    const gs = groupsOf(this.optimizer), T = this.tMax, e = this.lastEpoch, m = this.etaMin;
    if (e === 0) return gs.map((g) => g.lr);
    if (this.stepCount === 1 && e > 0) return this.baseLrs.map((b) => m + (b - m) * (1 + Math.cos(e * Math.PI / T)) / 2);
    if (pyMod(e - 1 - T, 2 * T) === 0) return gs.map((g, i) => g.lr + (this.baseLrs[i] - m) * (1 - Math.cos(Math.PI / T)) / 2);
    return gs.map((g) => (1 + Math.cos(Math.PI * e / T)) / (1 + Math.cos(Math.PI * (e - 1) / T)) * (g.lr - m) + m);
  }
  protected override closedFormLr(): number[] {
    return this.baseLrs.map((b) => this.etaMin + (b - this.etaMin) * (1 + Math.cos(Math.PI * this.lastEpoch / this.tMax)) / 2);
  }
}

/** The factor goes linearly from startFactor to endFactor over totalIters epochs (warm-up). */
export class LinearLR extends LRScheduler {
  readonly startFactor: number;
  readonly endFactor: number;
  readonly totalIters: number;
  constructor(optimizer: SchedulableOptimizer, opts: { startFactor?: number; endFactor?: number; totalIters?: number; lastEpoch?: number } = {}) {
    super(optimizer, opts.lastEpoch);
    this.startFactor = opts.startFactor ?? 1 / 3;
    this.endFactor = opts.endFactor ?? 1;
    this.totalIters = opts.totalIters ?? 5;
    if (!(this.startFactor > 0 && this.startFactor <= 1)) throw new Error(`LinearLR: startFactor must be in (0, 1], got ${this.startFactor}`);
    if (!(this.endFactor >= 0 && this.endFactor <= 1)) throw new Error(`LinearLR: endFactor must be in [0, 1], got ${this.endFactor}`);
    this.initialStep();
  }
  protected getLr(): number[] {
    const gs = groupsOf(this.optimizer), s = this.startFactor, f = this.endFactor, n = this.totalIters;
    if (this.lastEpoch === 0) return gs.map((g) => g.lr * s);
    if (this.lastEpoch > n) return gs.map((g) => g.lr);
    return gs.map((g) => g.lr * (1 + (f - s) / (n * s + (this.lastEpoch - 1) * (f - s))));
  }
  protected override closedFormLr(): number[] {
    const s = this.startFactor, f = this.endFactor, n = this.totalIters;
    return this.baseLrs.map((b) => b * (s + (f - s) * Math.min(n, this.lastEpoch) / n));
  }
}

/** lr = baseLr · lrLambda(epoch) (one function, or one per group). */
export class LambdaLR extends LRScheduler {
  readonly lrLambdas: ((epoch: number) => number)[];
  constructor(optimizer: SchedulableOptimizer, opts: { lrLambda: ((epoch: number) => number) | readonly ((epoch: number) => number)[]; lastEpoch?: number }) {
    super(optimizer, opts.lastEpoch);
    const n = optimizer.paramGroups.length;
    const fns = typeof opts.lrLambda === 'function' ? Array.from({ length: n }, () => opts.lrLambda as (e: number) => number) : [...opts.lrLambda];
    if (fns.length !== n) throw new Error(`LambdaLR: expected ${n} lrLambda functions (one per param group), got ${fns.length}`);
    this.lrLambdas = fns;
    this.initialStep();
  }
  protected getLr(): number[] { return this.baseLrs.map((b, i) => b * this.lrLambdas[i](this.lastEpoch)); }
  override stateDict(): SchedulerStateDict {
    const { lrLambdas: _, ...rest } = super.stateDict();
    return rest;
  }
}

export interface OneCycleLROptions {
  maxLr: number | readonly number[];
  totalSteps?: number;
  epochs?: number;
  stepsPerEpoch?: number;
  /** Fraction of the cycle spent increasing the lr (default 0.3). */
  pctStart?: number;
  annealStrategy?: 'cos' | 'linear';
  /** Cycle momentum (SGD) or beta1 (Adam) inversely to the lr (default true). */
  cycleMomentum?: boolean;
  baseMomentum?: number | readonly number[];
  maxMomentum?: number | readonly number[];
  /** initial lr = maxLr / divFactor (default 25). */
  divFactor?: number;
  /** min lr = initial lr / finalDivFactor (default 1e4). */
  finalDivFactor?: number;
  threePhase?: boolean;
  lastEpoch?: number;
}

interface Phase { endStep: number; startLr: string; endLr: string; startMomentum: string; endMomentum: string }

/**
 * The 1cycle policy (Smith & Topin): lr warms up from maxLr/divFactor to maxLr, then anneals to
 * a minimum; momentum (or Adam's beta1) moves the opposite way. Step it after every batch.
 * @example new optim.lrScheduler.OneCycleLR(opt, { maxLr: 0.01, totalSteps: 1000 })
 */
export class OneCycleLR extends LRScheduler {
  readonly totalSteps: number;
  readonly phases: Phase[];
  readonly annealStrategy: 'cos' | 'linear';
  readonly cycleMomentum: boolean;
  readonly useBeta1: boolean;
  constructor(optimizer: SchedulableOptimizer, opts: OneCycleLROptions) {
    // The groups' lr, initialLr, maxLr and minLr are set before the base class reads them.
    const groups = groupsOf(optimizer);
    const perGroup = (v: number | readonly number[], what: string): number[] => {
      if (typeof v === 'number') return groups.map(() => v);
      if (v.length !== groups.length) throw new Error(`OneCycleLR: expected ${groups.length} values for ${what}, got ${v.length}`);
      return [...v];
    };
    let total: number;
    if (opts.totalSteps !== undefined) {
      if (!(Number.isInteger(opts.totalSteps) && opts.totalSteps > 0)) throw new Error(`OneCycleLR: totalSteps must be a positive integer, got ${opts.totalSteps}`);
      total = opts.totalSteps;
    } else if (opts.epochs !== undefined && opts.stepsPerEpoch !== undefined) {
      if (!(opts.epochs > 0 && opts.stepsPerEpoch > 0)) throw new Error('OneCycleLR: epochs and stepsPerEpoch must be positive integers');
      total = opts.epochs * opts.stepsPerEpoch;
    } else {
      throw new Error('OneCycleLR: give totalSteps, or epochs and stepsPerEpoch');
    }
    const pct = opts.pctStart ?? 0.3;
    if (!(pct >= 0 && pct <= 1)) throw new Error(`OneCycleLR: pctStart must be in [0, 1], got ${pct}`);
    const lastEpoch = opts.lastEpoch ?? -1;
    const div = opts.divFactor ?? 25, finalDiv = opts.finalDivFactor ?? 1e4;
    if (lastEpoch === -1) {
      const maxLrs = perGroup(opts.maxLr, 'maxLr');
      groups.forEach((g, i) => {
        const initial = maxLrs[i] / div;
        g.initialLr = initial;
        g.lr = initial;
        g.maxLr = maxLrs[i];
        g.minLr = initial / finalDiv;
      });
    }
    const cycle = opts.cycleMomentum ?? true;
    const defaults = optimizer.defaults as Record<string, unknown>;
    const useBeta1 = 'betas' in defaults;
    if (cycle) {
      if (!('momentum' in defaults) && !useBeta1) throw new Error('OneCycleLR: optimizer must support momentum or betas with cycleMomentum enabled; pass { cycleMomentum: false }');
      if (lastEpoch === -1) {
        const maxM = perGroup(opts.maxMomentum ?? 0.95, 'maxMomentum'), baseM = perGroup(opts.baseMomentum ?? 0.85, 'baseMomentum');
        groups.forEach((g, i) => {
          if (useBeta1) g.betas = [maxM[i], (g.betas as number[])[1]];
          else g.momentum = maxM[i];
          g.maxMomentum = maxM[i];
          g.baseMomentum = baseM[i];
        });
      }
    }
    super(optimizer, lastEpoch);
    this.totalSteps = total;
    this.annealStrategy = opts.annealStrategy ?? 'cos';
    if (this.annealStrategy !== 'cos' && this.annealStrategy !== 'linear') throw new Error(`OneCycleLR: annealStrategy must be 'cos' or 'linear', got '${String(this.annealStrategy)}'`);
    this.cycleMomentum = cycle;
    this.useBeta1 = useBeta1;
    this.phases = opts.threePhase
      ? [
        { endStep: pct * total - 1, startLr: 'initialLr', endLr: 'maxLr', startMomentum: 'maxMomentum', endMomentum: 'baseMomentum' },
        { endStep: 2 * pct * total - 2, startLr: 'maxLr', endLr: 'initialLr', startMomentum: 'baseMomentum', endMomentum: 'maxMomentum' },
        { endStep: total - 1, startLr: 'initialLr', endLr: 'minLr', startMomentum: 'maxMomentum', endMomentum: 'maxMomentum' },
      ]
      : [
        { endStep: pct * total - 1, startLr: 'initialLr', endLr: 'maxLr', startMomentum: 'maxMomentum', endMomentum: 'baseMomentum' },
        { endStep: total - 1, startLr: 'maxLr', endLr: 'minLr', startMomentum: 'baseMomentum', endMomentum: 'maxMomentum' },
      ];
    this.initialStep();
  }
  #anneal(start: number, end: number, pct: number): number {
    if (this.annealStrategy === 'linear') return (end - start) * pct + start;
    const cosOut = Math.cos(Math.PI * pct) + 1;
    return end + (start - end) / 2.0 * cosOut;
  }
  protected getLr(): number[] {
    const stepNum = this.lastEpoch;
    if (stepNum > this.totalSteps) {
      throw new Error(`OneCycleLR: tried to step ${stepNum} times; the schedule has totalSteps=${this.totalSteps}`);
    }
    return groupsOf(this.optimizer).map((g) => {
      let start = 0, lr = 0, momentum = 0;
      for (let i = 0; i < this.phases.length; i++) {
        const ph = this.phases[i];
        if (stepNum <= ph.endStep || i === this.phases.length - 1) {
          const pct = (stepNum - start) / (ph.endStep - start);
          lr = this.#anneal(g[ph.startLr] as number, g[ph.endLr] as number, pct);
          if (this.cycleMomentum) momentum = this.#anneal(g[ph.startMomentum] as number, g[ph.endMomentum] as number, pct);
          break;
        }
        start = ph.endStep;
      }
      if (this.cycleMomentum) {
        if (this.useBeta1) g.betas = [momentum, (g.betas as number[])[1]];
        else g.momentum = momentum;
      }
      return lr;
    });
  }
}

/**
 * Runs `schedulers` one after another, switching at the `milestones` epochs (each later
 * scheduler restarts from epoch 0 there).
 * @example new optim.lrScheduler.SequentialLR(opt, { schedulers: [warmup, cosine], milestones: [5] })
 */
export class SequentialLR {
  lastEpoch: number;
  readonly schedulers: LRScheduler[];
  readonly milestones: number[];
  protected lastLr: number[];
  constructor(readonly optimizer: SchedulableOptimizer, opts: { schedulers: readonly LRScheduler[]; milestones: readonly number[]; lastEpoch?: number }) {
    const { schedulers, milestones } = opts;
    if (schedulers.length < 1) throw new Error('SequentialLR: expects at least one scheduler');
    schedulers.forEach((s, i) => {
      if (s.optimizer !== optimizer) throw new Error(`SequentialLR: scheduler ${i} belongs to another optimizer than the one given`);
    });
    if (milestones.length !== schedulers.length - 1) {
      throw new Error(`SequentialLR: expected ${schedulers.length - 1} milestones (one fewer than schedulers), got ${milestones.length}`);
    }
    this.schedulers = [...schedulers];
    this.milestones = [...milestones];
    this.lastEpoch = (opts.lastEpoch ?? -1) + 1;
    // As PyTorch: restore the initial lrs, undo the schedulers' initial steps, then redo the first one's.
    for (const g of groupsOf(optimizer)) g.lr = g.initialLr as number;
    for (const s of this.schedulers) s.lastEpoch -= 1;
    this.schedulers[0].initialStep();
    this.lastLr = this.schedulers[0].getLastLr();
  }
  step(): void {
    this.lastEpoch++;
    // bisect_right: the number of milestones <= lastEpoch.
    const idx = this.milestones.filter((m) => m <= this.lastEpoch).length;
    const s = this.schedulers[idx];
    if (idx > 0 && this.milestones[idx - 1] === this.lastEpoch) s.step(0);
    else s.step();
    this.lastLr = s.getLastLr();
  }
  getLastLr(): number[] { return [...this.lastLr]; }
  stateDict(): SchedulerStateDict {
    return { lastEpoch: this.lastEpoch, milestones: [...this.milestones], lastLr: [...this.lastLr], schedulers: this.schedulers.map((s) => s.stateDict()) };
  }
  loadStateDict(sd: SchedulerStateDict): void {
    const subs = sd.schedulers as SchedulerStateDict[] | undefined;
    if (!Array.isArray(subs) || subs.length !== this.schedulers.length) throw new Error(`SequentialLR.loadStateDict: expected ${this.schedulers.length} scheduler states`);
    this.lastEpoch = sd.lastEpoch as number;
    this.lastLr = [...(sd.lastLr as number[])];
    subs.forEach((s, i) => this.schedulers[i].loadStateDict(s));
  }
}

export interface ReduceLROnPlateauOptions {
  /** 'min' (default): a lower metric is better; 'max': higher is better. */
  mode?: 'min' | 'max';
  /** lr · factor on a plateau (default 0.1). */
  factor?: number;
  /** Epochs without improvement tolerated (default 10). */
  patience?: number;
  threshold?: number;
  thresholdMode?: 'rel' | 'abs';
  /** Epochs to wait after a reduction before counting again (default 0). */
  cooldown?: number;
  minLr?: number | readonly number[];
  /** Reductions smaller than this are skipped (default 1e-8). */
  eps?: number;
}

/** Multiplies the lr by `factor` when a metric (passed to step) stops improving for `patience` epochs. */
export class ReduceLROnPlateau {
  readonly mode: 'min' | 'max';
  readonly factor: number;
  readonly patience: number;
  readonly threshold: number;
  readonly thresholdMode: 'rel' | 'abs';
  readonly cooldown: number;
  readonly minLrs: number[];
  readonly eps: number;
  best: number;
  numBadEpochs = 0;
  cooldownCounter = 0;
  lastEpoch = 0;
  protected lastLr: number[];
  constructor(readonly optimizer: SchedulableOptimizer, opts: ReduceLROnPlateauOptions = {}) {
    this.factor = opts.factor ?? 0.1;
    if (!(this.factor < 1)) throw new Error(`ReduceLROnPlateau: factor should be < 1.0, got ${this.factor}`);
    const n = optimizer.paramGroups.length;
    const minLr = opts.minLr ?? 0;
    this.minLrs = typeof minLr === 'number' ? Array<number>(n).fill(minLr) : [...minLr];
    if (this.minLrs.length !== n) throw new Error(`ReduceLROnPlateau: expected ${n} minLr values (one per param group), got ${this.minLrs.length}`);
    this.mode = opts.mode ?? 'min';
    this.thresholdMode = opts.thresholdMode ?? 'rel';
    if (this.mode !== 'min' && this.mode !== 'max') throw new Error(`ReduceLROnPlateau: mode '${String(this.mode)}' is unknown; use 'min' or 'max'`);
    if (this.thresholdMode !== 'rel' && this.thresholdMode !== 'abs') throw new Error(`ReduceLROnPlateau: thresholdMode '${String(this.thresholdMode)}' is unknown; use 'rel' or 'abs'`);
    this.patience = opts.patience ?? 10;
    this.threshold = opts.threshold ?? 1e-4;
    this.cooldown = opts.cooldown ?? 0;
    this.eps = opts.eps ?? 1e-8;
    this.best = this.mode === 'min' ? Infinity : -Infinity;
    this.lastLr = groupsOf(optimizer).map((g) => g.lr);
  }
  #isBetter(a: number): boolean {
    const { best, threshold: t } = this;
    if (this.mode === 'min') return this.thresholdMode === 'rel' ? a < best * (1 - t) : a < best - t;
    return this.thresholdMode === 'rel' ? a > best * (t + 1) : a > best + t;
  }
  /** Records one epoch's metric (a number or a 0-d tensor with item()). */
  step(metric: number | { item(): number }): void {
    const current = typeof metric === 'number' ? metric : metric.item();
    this.lastEpoch++;
    if (this.#isBetter(current)) { this.best = current; this.numBadEpochs = 0; } else this.numBadEpochs++;
    if (this.cooldownCounter > 0) { this.cooldownCounter--; this.numBadEpochs = 0; }
    if (this.numBadEpochs > this.patience) {
      groupsOf(this.optimizer).forEach((g, i) => {
        const old = g.lr, next = Math.max(old * this.factor, this.minLrs[i]);
        if (old - next > this.eps) g.lr = next;
      });
      this.cooldownCounter = this.cooldown;
      this.numBadEpochs = 0;
    }
    this.lastLr = groupsOf(this.optimizer).map((g) => g.lr);
  }
  getLastLr(): number[] { return [...this.lastLr]; }
  stateDict(): SchedulerStateDict {
    const out: SchedulerStateDict = {};
    for (const [k, v] of Object.entries(this)) if (k !== 'optimizer') out[k] = structuredClone(v);
    return out;
  }
  loadStateDict(sd: SchedulerStateDict): void {
    for (const [k, v] of Object.entries(sd)) {
      if (!Object.prototype.hasOwnProperty.call(this, k)) throw new Error(`ReduceLROnPlateau.loadStateDict: unknown key '${k}'`);
      Reflect.set(this, k, structuredClone(v));
    }
  }
}
