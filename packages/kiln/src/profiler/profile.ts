// The profiler (torch.profiler's role). Invariant: while a Profiler is started it is the one
// dispatch observer, module-scope listener and runtime node profiler of this process, and it
// keeps an event only while its schedule says record; stop() detaches all three, even after an
// error in the profiled code. Eager ops are timed by the dispatch (beforeOp → onOp), compiled
// nodes by the executor (runtime node-profiler.ts), module calls by module-scope.ts.

import { writeFileSync } from 'node:fs';
import { addObserver, attachModuleScopes, currentModuleScope, memory, trace, type DispatchObserver, type Tensor } from '@kiln/core';
import { setNodeProfiler, type NodeEvent, type NodeProfiler, type RunEvent } from '@kiln/runtime';
import type { OpDef } from '@kiln/ir-spec';
import { chromeTrace } from './chrome-trace.js';
import { timelineHtml } from './timeline-html.js';
import type { ProfilerEvent } from './events.js';
import { keyAverages, type GroupBy, type KeyAverages } from './key-averages.js';
import type { ProfilerAction, Schedule } from './schedule.js';

export type Activity = 'cpu' | 'webgpu';

export interface ProfileOptions {
  /**
   * What to record: eager ops and CPU graph nodes ('cpu'), WebGPU graph nodes ('webgpu'; timed by
   * GPU timestamps on a device created with `createWebGpuDevice({ profile: true })`, otherwise on
   * the CPU side, to each dispatch's completion). Default both.
   */
  readonly activities?: readonly Activity[];
  /** Record each eager op's input shapes (compiled nodes always carry theirs). */
  readonly recordShapes?: boolean;
  /** Record the bytes each op allocated. */
  readonly profileMemory?: boolean;
  /** Record each eager op's source location in the user's code (reads a stack per op: slower). */
  readonly withStack?: boolean;
  /** Record module calls (`features.0`) as events and as each op's scope; default true. */
  readonly withModules?: boolean;
  /** Which steps record (start()/step()/stop() only); every step records without one. */
  readonly schedule?: Schedule;
  /** Called at the end of each recorded cycle of the schedule (and at stop() for a partial one). */
  readonly onTraceReady?: (prof: Profiler) => void;
}

const ACTIVITIES: readonly Activity[] = ['cpu', 'webgpu'];

export class Profiler {
  /** The recorded events (of the current or last cycle of the schedule). */
  events: ProfilerEvent[] = [];
  /** Milliseconds spent recording (start to stop, or the recorded steps). */
  wallMs = 0;
  /** Eager tensor bytes reclaimed while recording (profileMemory). */
  freedBytes = 0;
  private stepNum = 0;
  private action: ProfilerAction = 'none';
  private recordSince = 0;
  private stepSince = 0;
  private origin = 0;
  private detach: (() => void) | null = null;
  private readonly opStarts: number[] = [];
  private readonly moduleStarts: number[] = [];
  private readonly activities: ReadonlySet<Activity>;

  constructor(readonly opts: ProfileOptions = {}) {
    for (const a of opts.activities ?? []) {
      if (!ACTIVITIES.includes(a)) throw new Error(`profiler: activity '${String(a)}' is not one of ${ACTIVITIES.join(', ')}`);
    }
    this.activities = new Set(opts.activities ?? ACTIVITIES);
  }

  private get recording(): boolean { return this.action === 'record' || this.action === 'recordAndSave'; }

  /** Starts observing (step 0 of the schedule). */
  start(): this {
    if (this.detach) throw new Error('profiler: start() was called twice; call stop() first');
    const obs: DispatchObserver = {
      beforeOp: () => { this.opStarts.push(performance.now()); },
      onOp: (def, inputs, _attrs, outputs) => this.onOp(def, inputs, outputs),
    };
    const nodes: NodeProfiler = { onNode: (e) => this.onNode(e), onRun: (e) => this.onRun(e) };
    const undoScopes = this.opts.withModules ?? true ? attachModuleScopes({
      enter: () => { this.moduleStarts.push(performance.now()); },
      exit: (path, cls) => {
        const startMs = this.moduleStarts.pop() ?? performance.now();
        if (this.recording && this.activities.has('cpu')) this.events.push({ kind: 'module', name: `nn.Module: ${cls}`, device: 'cpu', startMs, endMs: performance.now(), scope: path, step: this.stepNum });
      },
    }) : () => {};
    const prevNodes = setNodeProfiler(nodes);
    const undoFreed = memory.onStorageFreed((b) => { if (this.recording) this.freedBytes += b; });
    const held = addObserver(obs);
    this.detach = () => { held(); setNodeProfiler(prevNodes); undoScopes(); undoFreed(); };
    this.origin = performance.now();
    this.enterStep();
    return this;
  }

  /** Ends the current step of the schedule and starts the next. */
  step(): void {
    if (!this.detach) throw new Error('profiler: step() before start()');
    const saved = this.leaveStep();
    this.stepNum++;
    this.enterStep();
    if (saved) this.opts.onTraceReady?.(this);
  }

  /** Stops observing; the events stay readable. */
  stop(): void {
    if (!this.detach) return;
    const was = this.action;
    this.leaveStep();
    this.action = 'none';
    this.detach();
    this.detach = null;
    if (was === 'record' || was === 'recordAndSave') this.opts.onTraceReady?.(this);
  }

  private enterStep(): void {
    const next = this.opts.schedule ? this.opts.schedule(this.stepNum) : 'record';
    const startsCycle = (next === 'record' || next === 'recordAndSave') && !this.recording;
    if (startsCycle && this.opts.schedule) { this.events = []; this.wallMs = 0; this.freedBytes = 0; }
    this.action = next;
    this.recordSince = this.stepSince = performance.now();
  }

  /** Closes the step; returns whether it ended a recorded cycle. */
  private leaveStep(): boolean {
    if (!this.recording) return false;
    const now = performance.now();
    this.wallMs += now - this.recordSince;
    if (this.opts.schedule) this.events.push({ kind: 'range', name: `ProfilerStep#${this.stepNum}`, device: 'cpu', startMs: this.stepSince, endMs: now, step: this.stepNum });
    return this.action === 'recordAndSave';
  }

  private onOp(def: OpDef, inputs: readonly (Tensor | null)[], outputs: readonly Tensor[]): void {
    const startMs = this.opStarts.pop() ?? performance.now();
    if (!this.recording || !this.activities.has('cpu')) return;
    const endMs = performance.now();
    const o = this.opts;
    let allocBytes: number | undefined;
    if (o.profileMemory) {
      const ins = new Set(inputs.map((t) => t?._storage));
      allocBytes = 0;
      for (const t of new Set(outputs.map((x) => x._storage))) if (!ins.has(t)) allocBytes += t.data.byteLength;
    }
    const scope = currentModuleScope();
    this.events.push({
      kind: 'op', name: def.name, device: 'cpu', startMs, endMs, step: this.stepNum,
      ...(o.recordShapes ? { inputShapes: inputs.map((t) => (t ? [...t.shape] : null)) } : {}),
      ...(scope ? { scope } : {}),
      ...(o.withStack ? { loc: trace.userLocation() } : {}),
      ...(allocBytes !== undefined ? { allocBytes } : {}),
    });
  }

  private onNode(e: NodeEvent): void {
    if (!this.recording || !this.activities.has(e.backend === 'webgpu' ? 'webgpu' : 'cpu')) return;
    this.events.push({
      kind: 'node', name: e.op, device: e.backend, startMs: e.startMs, endMs: e.endMs, inputShapes: e.inputShapes,
      ...(e.scope ? { scope: e.scope } : {}), ...(e.loc ? { loc: e.loc } : {}), covers: e.covers,
      allocBytes: e.outputBytes, timing: e.timing, step: this.stepNum,
      ...(e.dispatches !== undefined ? { dispatches: e.dispatches, timedDispatches: e.timedDispatches } : {}),
    });
  }

  private onRun(e: RunEvent): void {
    if (!this.recording || !this.activities.has(e.backend === 'webgpu' ? 'webgpu' : 'cpu')) return;
    this.events.push({ kind: 'run', name: `run ${e.graph}`, device: e.backend, startMs: e.startMs, endMs: e.endMs, allocBytes: e.peakBytes, step: this.stepNum });
  }

  /**
   * Times `fn` as a named range of the trace (torch.profiler.record_function).
   * @example prof.recordFunction('loss', () => F.crossEntropy(y, t));
   */
  recordFunction<R>(name: string, fn: () => R): R {
    const startMs = performance.now();
    const end = () => { if (this.recording) this.events.push({ kind: 'range', name, device: 'cpu', startMs, endMs: performance.now(), step: this.stepNum }); };
    const r = fn();
    if (r instanceof Promise) return r.finally(end) as R;
    end();
    return r;
  }

  /**
   * The recorded ops and kernels grouped by name (and input shapes, module scope or source line).
   * @example console.log(prof.keyAverages({ groupBy: 'source' }).table({ sortBy: 'total', rowLimit: 10 }));
   */
  keyAverages(opts: { groupBy?: GroupBy } = {}): KeyAverages {
    return keyAverages(this.events, opts.groupBy ?? 'op', this.wallMs);
  }

  /** The Chrome trace event JSON of the events (what exportChromeTrace writes). */
  chromeTrace(): ReturnType<typeof chromeTrace> {
    return chromeTrace(this.events, this.origin);
  }

  /**
   * A self-contained HTML page of the profile: a timeline per device (nested events stacked, a
   * tooltip per bar) and the keyAverages table grouped by `groupBy` (default 'source').
   */
  timelineHtml(title = 'kiln profile', groupBy: GroupBy = 'source'): string {
    return timelineHtml(this.events, title, this.keyAverages({ groupBy }).table({ rowLimit: 20 }));
  }

  /** Writes timelineHtml() to `path`. */
  exportHtml(path: string, title?: string): void {
    writeFileSync(path, this.timelineHtml(title));
  }

  /** Writes the Chrome trace event JSON (open it in https://ui.perfetto.dev or chrome://tracing). */
  exportChromeTrace(path: string): void {
    writeFileSync(path, JSON.stringify(this.chromeTrace()));
  }
}

/**
 * Profiles `fn` (torch.profiler.profile): returns the Profiler once `fn` (or its promise) is done.
 * @example
 * const prof = profiler.profile({ recordShapes: true, profileMemory: true }, () => model.forward(x));
 * console.log(prof.keyAverages().table({ sortBy: 'total', rowLimit: 10 }));
 * prof.exportChromeTrace('trace.json');
 */
export function profile(opts: ProfileOptions, fn: (prof: Profiler) => Promise<unknown>): Promise<Profiler>;
export function profile(opts: ProfileOptions, fn: (prof: Profiler) => unknown): Profiler;
export function profile(opts: ProfileOptions, fn: (prof: Profiler) => unknown): Profiler | Promise<Profiler> {
  if (opts.schedule) throw new Error('profiler.profile: a schedule needs steps; use profiler.start({ schedule }) with step() and stop()');
  const prof = new Profiler(opts).start();
  let r: unknown;
  try {
    r = fn(prof);
  } catch (e) {
    prof.stop();
    throw e;
  }
  if (r instanceof Promise) return r.then(() => { prof.stop(); return prof; }, (e: unknown) => { prof.stop(); throw e; });
  prof.stop();
  return prof;
}

/** Starts a profiler for a start()/step()/stop() loop. */
export function start(opts: ProfileOptions = {}): Profiler {
  return new Profiler(opts).start();
}
