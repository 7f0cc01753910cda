// Chrome's trace event format (the JSON chrome://tracing and Perfetto open). Invariant: every
// event is a complete event ('X') with microsecond `ts`/`dur` relative to the profile's start;
// events on one thread nest by time, so an op's interval lies inside the module call or the run
// that contains it: eager work is thread 1 of process 1 (cpu), compiled runs thread 1 of the
// process of their device, and nodes timed by GPU timestamps thread 2 of it (the GPU track: on
// the GPU clock, they need not lie inside the CPU-side events).

import { sourceOf, type ProfilerEvent } from './events.js';

export interface ChromeTraceEvent {
  readonly name: string;
  readonly cat: string;
  readonly ph: 'X' | 'M';
  readonly ts: number;
  readonly dur?: number;
  readonly pid: number;
  readonly tid: number;
  readonly args: Record<string, unknown>;
}

const PIDS: Record<string, number> = { cpu: 1, webgpu: 2 };

/** The trace of `events`, time 0 at `originMs`. */
export function chromeTrace(events: readonly ProfilerEvent[], originMs: number): { traceEvents: ChromeTraceEvent[]; displayTimeUnit: 'ms' } {
  const us = (t: number) => Math.round((t - originMs) * 1000 * 1000) / 1000;
  const pidOf = (d: string) => PIDS[d] ?? 3;
  const tidOf = (e: ProfilerEvent) => (e.timing === 'gpu' ? 2 : 1);
  const meta: ChromeTraceEvent[] = [...new Set(events.map((e) => e.device))].map((d) => ({ name: 'process_name', cat: '__metadata', ph: 'M', ts: 0, pid: pidOf(d), tid: 1, args: { name: d === 'cpu' ? 'CPU' : d === 'webgpu' ? 'WebGPU' : d } }));
  for (const d of new Set(events.filter((e) => e.timing === 'gpu').map((e) => e.device))) {
    meta.push({ name: 'thread_name', cat: '__metadata', ph: 'M', ts: 0, pid: pidOf(d), tid: 1, args: { name: 'CPU side' } });
    meta.push({ name: 'thread_name', cat: '__metadata', ph: 'M', ts: 0, pid: pidOf(d), tid: 2, args: { name: 'GPU (timestamp queries)' } });
  }
  // Longer events first at equal starts, so viewers see the parent before its children.
  const sorted = [...events].sort((a, b) => a.startMs - b.startMs || (b.endMs - b.startMs) - (a.endMs - a.startMs));
  const traceEvents = sorted.map((e): ChromeTraceEvent => {
    const args: Record<string, unknown> = {};
    if (e.inputShapes) args['Input Dims'] = e.inputShapes;
    if (e.scope !== undefined) args['Module Scope'] = e.scope;
    const src = sourceOf(e);
    if (src) args['Source'] = src;
    if (e.covers) args['IR nodes'] = e.covers.map((c) => `${c.op}${c.scope ? ` in ${c.scope}` : ''}${c.loc ? ` at ${c.loc}` : ''}`);
    if (e.allocBytes !== undefined) args['Bytes'] = e.allocBytes;
    if (e.timing) args['Timing'] = e.timing;
    if (e.dispatches !== undefined) args['Dispatches'] = e.timedDispatches === e.dispatches ? e.dispatches : `${e.dispatches} (${e.timedDispatches} timed)`;
    if (e.step !== undefined) args['Step'] = e.step;
    const start = us(e.startMs);
    return { name: e.name, cat: e.kind, ph: 'X', ts: start, dur: Math.max(0, us(e.endMs) - start), pid: pidOf(e.device), tid: tidOf(e), args };
  });
  return { traceEvents: [...meta, ...traceEvents], displayTimeUnit: 'ms' };
}
