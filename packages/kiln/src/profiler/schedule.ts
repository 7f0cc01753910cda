// profiler.schedule: which steps of a start()/step()/stop() loop record (torch.profiler.schedule).
// Invariant: steps cycle through `wait` idle steps, `warmup` steps observed but discarded, and
// `active` recorded steps; the last active step of a cycle ends it ('recordAndSave'); after
// `repeat` cycles (0 = forever) every step is idle.

export type ProfilerAction = 'none' | 'warmup' | 'record' | 'recordAndSave';
export type Schedule = (step: number) => ProfilerAction;

export interface ScheduleOptions { wait?: number; warmup?: number; active: number; repeat?: number; skipFirst?: number }

/**
 * @example
 * const prof = profiler.start({ schedule: profiler.schedule({ wait: 1, warmup: 1, active: 3 }) });
 * for (const batch of data) { trainStep(batch); prof.step(); }
 * prof.stop();
 */
export function schedule(opts: ScheduleOptions): Schedule {
  const wait = opts.wait ?? 0, warmup = opts.warmup ?? 0, active = opts.active, repeat = opts.repeat ?? 0, skip = opts.skipFirst ?? 0;
  for (const [k, v] of Object.entries({ wait, warmup, active, repeat, skipFirst: skip })) {
    if (!Number.isInteger(v) || v < 0) throw new RangeError(`profiler.schedule: ${k} must be a whole number >= 0, got ${String(v)}`);
  }
  if (active < 1) throw new RangeError('profiler.schedule: active must be at least 1 (the steps that record)');
  const cycle = wait + warmup + active;
  return (step: number): ProfilerAction => {
    if (step < skip) return 'none';
    const s = step - skip;
    if (repeat > 0 && s >= cycle * repeat) return 'none';
    const k = s % cycle;
    if (k < wait) return 'none';
    if (k < wait + warmup) return 'warmup';
    return k === cycle - 1 ? 'recordAndSave' : 'record';
  };
}
