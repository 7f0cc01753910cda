// What a profile records. Invariant: an event's times are `performance.now()` milliseconds of
// this process; `kind` says what it is: an eager op (one dispatch), a compiled node (one kernel
// of a run, naming the IR nodes it covers), a compiled run, a module call, or a user range — the
// op and node events are the leaves whose times the tables add up.

import type { CoveredNode } from '@kiln/runtime';

export type EventKind = 'op' | 'node' | 'run' | 'module' | 'range';

export interface ProfilerEvent {
  readonly kind: EventKind;
  /** Op name (`conv2d`), node op, `run <graph>`, module class, or the range's name. */
  readonly name: string;
  /** `cpu` or `webgpu`: where it ran. */
  readonly device: string;
  readonly startMs: number;
  readonly endMs: number;
  /** Input shapes (recordShapes; compiled nodes always). */
  readonly inputShapes?: readonly (readonly number[] | null)[];
  /** Module path (`features.0`). */
  readonly scope?: string;
  /** The user's source location `file:line:col` (withStack for eager ops; compiled nodes carry theirs). */
  readonly loc?: string;
  /** Compiled nodes: the IR nodes the kernel covers. */
  readonly covers?: readonly CoveredNode[];
  /** Bytes the event allocated (profileMemory; for a run, its measured peak). */
  readonly allocBytes?: number;
  /**
   * How a compiled node was timed: `kernel` (CPU), `gpu` (timestamp queries of its dispatches) or
   * `synchronized` (CPU-side, to the dispatch's completion).
   */
  readonly timing?: string;
  /** `gpu` timing: the node's dispatches, and how many of them had timestamps. */
  readonly dispatches?: number;
  readonly timedDispatches?: number;
  /** Which step of a start()/step() schedule recorded it. */
  readonly step?: number;
}

/** The source location(s) an event came from: a compiled node's covered nodes' locations, or its own. */
export function sourceOf(e: ProfilerEvent): string {
  const locs = e.covers ? [...new Set(e.covers.map((c) => c.loc).filter(Boolean))] : [];
  if (locs.length) return locs.join(' + ');
  return e.loc ?? '';
}

/** Whether the event is a leaf that takes time of its own (an eager op or a compiled node). */
export const isLeaf = (e: ProfilerEvent): boolean => e.kind === 'op' || e.kind === 'node';
