// Replay of a straight-line run on a synchronous device (the CPU). A run of a model whose body is
// registry ops (none sizing a result by data) and constants only, on inputs of the dtypes and
// shapes of the run before it, does
// exactly what that run did: the same kernels with the same attributes, results in the same
// arena slots, the same limits passed (tensor sizes and live bytes depend on shapes alone). So
// the executor's first such run is recorded (ExecContext.recorder) and later ones replay the
// record: a list of dispatches over an array of values, without the scopes, buffer accounting,
// shape inference and output checks a run otherwise repeats per node. At batch 1 that work costs
// as much as the kernels. Invariants: a record is used only while the arena is as the recording
// run left it (model.ts drops it when any other run starts); a replay checks the time limit
// before every node as a run does, and anything it cannot match exactly (an input of another
// shape, dtype or array class) runs the normal path, which also gives the errors.

import { numel, type Attrs, type DType, type TypedArray, type Value } from '@kiln/ir-spec';
import type { Device, DeviceTensor } from './device.js';
import { callKernel, checkTime, checkWork, type ExecContext, type StepRecorder } from './executor.js';
import type { Output, RunStats } from './model.js';
import type { NodePlan } from './plan.js';
import type { RecycledArrays } from './recycled.js';

/** Where a replayed node finds an input: an index into the run's values, or a fixed tensor (a param or constant). */
type Source = number | DeviceTensor | null;

interface Step {
  readonly np: NodePlan;
  readonly inputs: readonly Source[];
  readonly attrs: Attrs;
  /** The arena tensors the results were offered (never a graph output's: see `escaping`). */
  readonly out: readonly (DeviceTensor | undefined)[] | undefined;
  /** Per result: the dtype and shape of a graph output a borrowing run hands over, whose array
   * a replay takes from the recycled ones at its time (undefined for other results). */
  readonly escaping: readonly ({ dtype: DType; shape: readonly number[] } | undefined)[] | undefined;
  /** Indices of the node's results in the run's values. */
  readonly results: readonly number[];
  /** The node's multiply-adds (OpDef.work), checked against the time left like a run does; 0 when the op has no rule. */
  readonly work: number;
}

/** The dtype and shape of each tensor input a record was made for. */
interface InputKey {
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly array: new (n: number) => TypedArray;
}

/** Collects a run's dispatches (the executor calls `step` for every registry op it runs). */
export class RunRecorder implements StepRecorder {
  private readonly index = new Map<Value, number>();
  private readonly steps: Step[] = [];
  private readonly slotBuffers = new Set<unknown>();

  /** `escaping`: the graph outputs a borrowing run hands over (an array offered to one of them
   * is the caller's afterwards, never to be offered again). */
  constructor(inputs: readonly Value[], private readonly escaping?: ReadonlySet<Value>) {
    inputs.forEach((v, k) => this.index.set(v, k));
  }

  step(np: NodePlan, inputs: readonly (DeviceTensor | null)[], attrs: Attrs, out: readonly (DeviceTensor | undefined)[] | undefined, outs: readonly DeviceTensor[], work: number): void {
    // A value the run did not make (a param or a constant) is the same tensor in every run.
    const sources = np.node.inputs.map((v, i) => (v && this.index.has(v) ? this.index.get(v)! : inputs[i]));
    const results = np.node.outputs.map((v) => {
      const k = this.index.size;
      this.index.set(v, k);
      return k;
    });
    const handed = this.escaping && np.node.outputs.map((v, i) => (this.escaping!.has(v) && outs[i] ? { dtype: outs[i].dtype, shape: [...outs[i].shape] } : undefined));
    const escaping = handed?.some((e) => e) ? handed : undefined;
    const slots = out && escaping ? out.map((t, i) => (escaping[i] ? undefined : t)) : out;
    if (slots) for (const t of slots) if (t) this.slotBuffers.add(t.buffer);
    this.steps.push({ np, inputs: sources, attrs, out: slots, escaping, results, work });
  }

  /**
   * The record of the finished run, or undefined when it cannot be replayed: an output that is
   * not a tensor the record can name.
   */
  finish(inputs: readonly { dtype: DType; shape: readonly number[]; data: TypedArray }[], outputs: readonly { name: string; value: Value }[], fixed: ReadonlyMap<Value, DeviceTensor>, stats: RunStats): RunRecord | undefined {
    const outs: { name: string; source: Source }[] = [];
    for (const o of outputs) {
      const source = this.index.get(o.value) ?? fixed.get(o.value);
      if (source === undefined) return undefined;
      outs.push({ name: o.name, source });
    }
    const key = inputs.map((t) => ({ dtype: t.dtype, shape: [...t.shape], array: t.data.constructor as InputKey['array'] }));
    return new RunRecord(key, this.steps, outs, this.slotBuffers, stats, this.index.size);
  }
}

/** A recorded run, replayed for inputs of the same dtypes, shapes and array classes. */
export class RunRecord {
  /** The inputs' device tensors of a copying replay, made at its first use and written each run. */
  private inputTensors: DeviceTensor[] | undefined;

  constructor(
    private readonly key: readonly InputKey[],
    private readonly steps: readonly Step[],
    private readonly outputs: readonly { name: string; source: Source }[],
    /** Arena buffers the run's results were offered: an output there must be copied out. */
    private readonly slotBuffers: ReadonlySet<unknown>,
    private readonly stats: RunStats,
    /** Values a replay holds: the inputs and every node's results. */
    private readonly valueCount: number,
  ) {}

  /** The inputs' arrays, when `inputs` match the record exactly (else undefined: run the normal path). */
  match(inputs: readonly unknown[]): TypedArray[] | undefined {
    if (!Array.isArray(inputs) || inputs.length !== this.key.length) return undefined;
    const arrays: TypedArray[] = [];
    for (let k = 0; k < inputs.length; k++) {
      const v = inputs[k] as { data?: unknown; shape?: unknown; dtype?: unknown } | null;
      const want = this.key[k];
      if (typeof v !== 'object' || v === null || v.dtype !== want.dtype || !Array.isArray(v.shape) || v.shape.length !== want.shape.length) return undefined;
      for (let d = 0; d < want.shape.length; d++) if (v.shape[d] !== want.shape[d]) return undefined;
      const data = v.data;
      if (!(data instanceof want.array) || data.constructor !== want.array || (data as TypedArray).length !== numel(want.shape)) return undefined;
      arrays.push(data as TypedArray);
    }
    return arrays;
  }

  /**
   * Runs the record on `arrays` (from match). `borrow`: the arrays are used as they are and
   * results computed into fresh buffers are handed over (ModelOptions.shareArrays); otherwise
   * inputs are copied in and outputs copied out, as a run does. `modelBuffers`: the model's
   * params and constants, never handed over.
   */
  replay(ctx: ExecContext, arrays: readonly TypedArray[], borrow: boolean, modelBuffers: ReadonlySet<unknown>, recycled?: RecycledArrays): { outputs: Output[]; stats: RunStats } {
    const device: Device = ctx.device;
    const values: (DeviceTensor | undefined)[] = new Array(this.valueCount);
    for (let k = 0; k < arrays.length; k++) {
      const { dtype, shape } = this.key[k];
      let t: DeviceTensor;
      if (borrow) t = device.adopt!(dtype, shape, arrays[k]);
      else {
        t = (this.inputTensors ??= this.key.map((i) => device.alloc(i.dtype, i.shape)))[k];
        device.write(t, arrays[k]);
      }
      values[k] = t;
    }
    const timed = ctx.limits.maxRunMs < Infinity, rate = device.peakWorkRate;
    for (const s of this.steps) {
      if (timed) {
        checkTime(ctx, s.np);
        if (s.work && rate) checkWork(ctx, s.np, s.work, rate);
      }
      ctx.nodesRun++;
      const ins = s.inputs.map((src) => (typeof src === 'number' ? values[src]! : src));
      const outs = callKernel(ctx, s.np, ins, s.attrs, undefined, borrow && recycled && s.escaping ? withRecycled(s, recycled) : s.out);
      for (let i = 0; i < s.results.length; i++) values[s.results[i]] = outs[i];
    }
    const handed = new Set<unknown>();
    const outputs = this.outputs.map(({ name, source }) => {
      const t = typeof source === 'number' ? values[source]! : source!;
      let data: TypedArray;
      // Handed over: a borrowing run's fresh result (not an input's array, a param, a slot or given already).
      if (borrow && !arrays.includes(t.buffer as TypedArray) && !modelBuffers.has(t.buffer) && !this.slotBuffers.has(t.buffer) && !handed.has(t.buffer)) {
        handed.add(t.buffer);
        data = t.buffer as TypedArray;
      } else {
        data = device.read(t) as TypedArray;
      }
      return { name, data, shape: [...t.shape], dtype: t.dtype };
    });
    return { outputs, stats: { ...this.stats, ms: performance.now() - ctx.started } };
  }
}

/** A step's offers with recycled arrays (Model.recycle) for the graph outputs it hands over, as a borrowing run offers them. */
function withRecycled(s: Step, recycled: RecycledArrays): (DeviceTensor | undefined)[] {
  return s.escaping!.map((e, i) => {
    if (!e) return s.out?.[i];
    const data = recycled.take(e.dtype, numel(e.shape));
    return data && { buffer: data, shape: [...e.shape], dtype: e.dtype };
  });
}
