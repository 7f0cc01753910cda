// Per-node events of compiled runs, for profilers (kiln's `profiler.profile`). Invariant: while
// no profiler is attached the executor pays one variable read per block, nothing per node; while
// one is attached, every registry-op node a run executes yields exactly one NodeEvent, after the
// node ran, naming the IR nodes its kernel covers (a fused_elementwise: the nodes fused into its
// body) with their module scopes and source locations. On the CPU a node's time is its kernel's.
// On WebGPU with timestamp queries (a device created with `profile: true`: Device.dispatchTimer)
// the executor only marks the dispatches each node records; once the run's outputs are read,
// GpuNodeLog turns their timestamps into the nodes' GPU times (`timing: 'gpu'`) and reports the
// events then, before run() resolves. On WebGPU without timestamps the executor reads the node's
// first result before timing ends: the dispatch's real time measured on the CPU side
// (`timing: 'synchronized'`), which serializes the run.

import type { Node } from '@kiln/ir-spec';
import type { BackendName, DispatchTimer } from './device.js';

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
  /**
   * `kernel`: the CPU kernel's own time; `gpu`: from the GPU timestamps of the node's dispatches;
   * `synchronized`: a non-CPU dispatch timed on the CPU side up to its completion; `issued`: a
   * non-CPU dispatch of a run that never waits (Model.runDevice: jit.compile on WebGPU), timed
   * until it was recorded (the host's share only).
   */
  readonly timing: 'kernel' | 'gpu' | 'synchronized' | 'issued';
  /**
   * `performance.now()` milliseconds. For `gpu` timing, the span from the first dispatch's begin
   * to the last one's end on the GPU clock, placed on this clock so that the run's last timed
   * dispatch ends when the run ended (GPU and CPU clocks share no origin).
   */
  readonly startMs: number;
  readonly endMs: number;
  /** `gpu` timing: dispatches the node recorded (packing passes included), and how many of them had timestamps. */
  readonly dispatches?: number;
  readonly timedDispatches?: number;
}

/** A NodeEvent before its GPU times are known. */
export type UntimedNodeEvent = Omit<NodeEvent, 'timing' | 'startMs' | 'endMs' | 'dispatches' | 'timedDispatches'>;

/**
 * The nodes of one profiled run on a device with a DispatchTimer, each with the marks around
 * its dispatches; complete() reports them with their GPU times once the run's work is done.
 */
export class GpuNodeLog {
  private readonly nodes: { e: UntimedNodeEvent; from: number; to: number }[] = [];
  private readonly first: number;
  readonly release: () => void;

  constructor(readonly timer: DispatchTimer, private readonly prof: NodeProfiler) {
    this.release = timer.hold();
    this.first = timer.mark();
  }

  add(e: UntimedNodeEvent, from: number, to: number): void { this.nodes.push({ e, from, to }); }

  /** Waits for the timestamps and reports every node (call after the run's outputs are read; releases the timer). */
  async complete(runEndMs: number): Promise<void> {
    try {
      const stamps = await this.timer.take(this.first, this.timer.mark());
      let last = 0n;
      for (const st of stamps.values()) if (st[1] > last) last = st[1];
      const at = (ns: bigint) => runEndMs - Number(last - ns) / 1e6;
      for (const { e, from, to } of this.nodes) {
        let begin: bigint | null = null, end = 0n, timed = 0;
        for (let k = from; k < to; k++) {
          const st = stamps.get(k);
          if (!st) continue;
          timed++;
          if (begin === null || st[0] < begin) begin = st[0];
          if (st[1] > end) end = st[1];
        }
        const startMs = begin === null ? runEndMs : at(begin);
        const endMs = begin === null ? runEndMs : at(end);
        this.prof.onNode({ ...e, timing: 'gpu', startMs, endMs, dispatches: to - from, timedDispatches: timed });
      }
    } finally {
      this.release();
    }
  }
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
