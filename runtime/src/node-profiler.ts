// Per-node events of compiled runs, for profilers (kiln's `profiler.profile`). Invariant: while
// no profiler is attached the executor pays one variable read per block, nothing per node; while
// one is attached, every registry-op node a run executes yields exactly one NodeEvent, after the
// node ran, naming the IR nodes its kernel covers (a fused_elementwise: the nodes fused into its
// body) with their module scopes and source locations. On an asynchronous device (WebGPU) the
// executor reads the node's first result before timing ends, so the time is the dispatch's real
// time, measured on the CPU side (`timing: 'synchronized'`); on the CPU a node's time is its kernel's.

import type { Node } from '@kiln/ir-spec';
import type { BackendName } from './device.js';

/** One IR node a kernel covers: its op, module scope (`features.0`) and source location (`file:line:col`). */
export interface CoveredNode {
  readonly op: string;
  readonly scope?: string;
  readonly loc?: string;
}

/** One executed node of a compiled run. Times are `performance.now()` milliseconds. */
export interface NodeEvent {
  /** The node's op (`conv2d`, `fused_elementwise`). */
  readonly op: string;
  readonly scope?: string;
  readonly loc?: string;
  /** The IR nodes this kernel executes: the node itself, or the nodes fused into it. */
  readonly covers: readonly CoveredNode[];
  readonly inputShapes: readonly (readonly number[] | null)[];
  /** Bytes of the results the node produced (arena slots included). */
  readonly outputBytes: number;
  readonly backend: BackendName;
  /** `kernel`: the CPU kernel's own time; `synchronized`: a non-CPU dispatch timed up to its completion. */
  readonly timing: 'kernel' | 'synchronized';
  readonly startMs: number;
  readonly endMs: number;
}

/** One whole run of a compiled graph. */
export interface RunEvent {
  readonly graph: string;
  readonly backend: BackendName;
  readonly startMs: number;
  readonly endMs: number;
  /** Measured peak bytes of the run's intermediates (RunStats.measuredPeakBytes). */
  readonly peakBytes: number;
}

export interface NodeProfiler {
  onNode(e: NodeEvent): void;
  onRun(e: RunEvent): void;
}

let active: NodeProfiler | null = null;

/** Attaches `p` (null detaches); returns the profiler attached before, to restore it. */
export function setNodeProfiler(p: NodeProfiler | null): NodeProfiler | null {
  const prev = active;
  active = p;
  return prev;
}

/** The attached profiler, or null. */
export function nodeProfiler(): NodeProfiler | null { return active; }

const coverCache = new WeakMap<Node, readonly CoveredNode[]>();

const covered = (n: Node): CoveredNode => ({ op: n.op, ...(n.meta.scope ? { scope: n.meta.scope } : {}), ...(n.meta.loc ? { loc: n.meta.loc } : {}) });

/** The IR nodes `node`'s kernel executes: an element body's nodes (literals aside) or the node itself, then the nodes passes merged into it. */
export function coveredNodes(node: Node): readonly CoveredNode[] {
  let c = coverCache.get(node);
  if (!c) {
    const own = node.op === 'fused_elementwise' && node.regions[0]
      ? node.regions[0].nodes.filter((n) => n.op !== 'constant').map(covered)
      : [covered(node)];
    c = [...own, ...(node.meta.fused ?? [])]; // what folds and epilogue fusions merged into it
    coverCache.set(node, c);
  }
  return c;
}
