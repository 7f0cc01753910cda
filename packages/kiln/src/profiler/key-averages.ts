// keyAverages(): profile events grouped by op name (and shape, module scope or source line),
// and the PyTorch-like table of the groups. Invariant: only leaf events (eager ops, compiled
// nodes) are grouped, so the groups' times add up to the profiled time spent in kernels and
// nothing is counted twice; the total line states it beside the profile's wall time.

import { isLeaf, sourceOf, type ProfilerEvent } from './events.js';

export type GroupBy = 'op' | 'shape' | 'scope' | 'source';
export type SortBy = 'total' | 'avg' | 'count' | 'memory' | 'name';

/** One group of events. */
export interface KeyAverage {
  readonly name: string;
  readonly device: string;
  /** The grouping column's value: shapes, scope or source ('' when grouped by op only). */
  readonly key: string;
  readonly count: number;
  readonly totalMs: number;
  readonly avgMs: number;
  readonly allocBytes: number;
  /** Whether the group's times are GPU times (timestamp queries) rather than CPU-side. */
  readonly gpu: boolean;
}

const shapeText = (e: ProfilerEvent) => (e.inputShapes ?? []).map((s) => (s ? `[${s.join(', ')}]` : 'None')).join(', ');

function keyOf(e: ProfilerEvent, by: GroupBy): string {
  if (by === 'shape') return shapeText(e);
  if (by === 'scope') return e.scope ?? '';
  if (by === 'source') return sourceOf(e);
  return '';
}

const COLUMN: Record<GroupBy, string> = { op: '', shape: 'Input Shapes', scope: 'Module Scope', source: 'Source Location' };

function bytes(n: number): string {
  const a = Math.abs(n);
  if (a >= 1 << 20) return `${(n / (1 << 20)).toFixed(2)} Mb`;
  if (a >= 1 << 10) return `${(n / (1 << 10)).toFixed(2)} Kb`;
  return `${n} b`;
}

const ms = (x: number) => (x >= 1 ? `${x.toFixed(3)}ms` : `${(x * 1000).toFixed(3)}us`);

/** The grouped averages of a profile, printable as a table. */
export class KeyAverages extends Array<KeyAverage> {
  /** Milliseconds between the profile's start and stop (0 when unknown). */
  wallMs = 0;
  groupBy: GroupBy = 'op';

  /** Sum of every group's time: the profiled time spent in ops and kernels. */
  totalMs(): number { return this.reduce((a, k) => a + k.totalMs, 0); }

  /** Sum of the GPU-timed groups' times (kernels timed by GPU timestamps). */
  gpuTotalMs(): number { return this.reduce((a, k) => a + (k.gpu ? k.totalMs : 0), 0); }

  /**
   * The table PyTorch's `key_averages().table()` prints: one row per group, sorted.
   * @example console.log(prof.keyAverages({ groupBy: 'scope' }).table({ sortBy: 'total', rowLimit: 10 }));
   */
  table(opts: { sortBy?: SortBy; rowLimit?: number } = {}): string {
    const sortBy = opts.sortBy ?? 'total';
    const cmp: Record<SortBy, (a: KeyAverage, b: KeyAverage) => number> = {
      total: (a, b) => b.totalMs - a.totalMs, avg: (a, b) => b.avgMs - a.avgMs, count: (a, b) => b.count - a.count,
      memory: (a, b) => b.allocBytes - a.allocBytes, name: (a, b) => a.name.localeCompare(b.name),
    };
    if (!(sortBy in cmp)) throw new Error(`keyAverages().table: sortBy '${String(sortBy)}' is not one of ${Object.keys(cmp).join(', ')}`);
    const total = this.totalMs();
    const rows = [...this].sort(cmp[sortBy]).slice(0, opts.rowLimit ?? Infinity);
    const head = ['Name', 'Device', 'Total %', 'Total', 'Avg', '# of Calls', 'Mem alloc', ...(COLUMN[this.groupBy] ? [COLUMN[this.groupBy]] : [])];
    const body = rows.map((k) => [k.name, k.device, `${total ? ((100 * k.totalMs) / total).toFixed(2) : '0.00'}%`, ms(k.totalMs), ms(k.avgMs), String(k.count), bytes(k.allocBytes), ...(COLUMN[this.groupBy] ? [k.key] : [])]);
    const widths = head.map((h, i) => Math.min(60, Math.max(h.length, ...body.map((r) => r[i].length))));
    const cut = (s: string, w: number) => (s.length > w ? `${s.slice(0, w - 3)}...` : s);
    const line = (r: string[]) => r.map((c, i) => (i === 0 || i === r.length - 1 && COLUMN[this.groupBy] ? cut(c, widths[i]).padEnd(widths[i]) : cut(c, widths[i]).padStart(widths[i]))).join('  ');
    const rule = widths.map((w) => '-'.repeat(w)).join('  ');
    return [rule, line(head), rule, ...body.map(line), rule,
      `Self CPU time total: ${ms(total - this.gpuTotalMs())}${this.wallMs ? ` (wall time of the profile: ${ms(this.wallMs)})` : ''}`,
      ...(this.some((k) => k.gpu) ? [`Self GPU time total: ${ms(this.gpuTotalMs())} (timestamp queries)`] : []), ''].join('\n');
  }
}

/** Groups the leaf events of `events` by name and device (plus `groupBy`'s key). */
export function keyAverages(events: readonly ProfilerEvent[], groupBy: GroupBy = 'op', wallMs = 0): KeyAverages {
  if (!(groupBy in COLUMN)) throw new Error(`keyAverages: groupBy '${String(groupBy)}' is not one of ${Object.keys(COLUMN).join(', ')}`);
  const groups = new Map<string, { name: string; device: string; key: string; count: number; totalMs: number; allocBytes: number; gpu: boolean }>();
  for (const e of events) {
    if (!isLeaf(e)) continue;
    const key = keyOf(e, groupBy);
    const gpu = e.timing === 'gpu';
    const id = `${e.name}\u0000${e.device}\u0000${key}\u0000${gpu}`;
    let g = groups.get(id);
    if (!g) groups.set(id, (g = { name: e.name, device: e.device, key, count: 0, totalMs: 0, allocBytes: 0, gpu }));
    g.count++;
    g.totalMs += e.endMs - e.startMs;
    g.allocBytes += e.allocBytes ?? 0;
  }
  const out = new KeyAverages();
  out.wallMs = wallMs;
  out.groupBy = groupBy;
  for (const g of groups.values()) out.push({ ...g, avgMs: g.totalMs / g.count });
  return out;
}
