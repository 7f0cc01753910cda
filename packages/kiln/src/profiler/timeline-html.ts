// A profile as one self-contained HTML page (no script, no network): a timeline per device with
// events stacked by nesting (a module call above the ops it ran, a run above its kernels), each
// bar's tooltip naming its time, shapes, scope, source lines and covered IR nodes, and the
// keyAverages table below. Invariant: one `<rect class="ev">` per event; an event's row is its
// nesting depth among the events of its device (an event inside another is one row lower).

import { sourceOf, type ProfilerEvent } from './events.js';

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const COLORS: Record<ProfilerEvent['kind'], string> = { run: '#94a3b8', module: '#c7d2fe', range: '#e2e8f0', op: '#60a5fa', node: '#f59e0b' };
const WIDTH = 1400, ROW = 22, LANE_GAP = 30, LEFT = 90;

/** Depth of each event among `events` (sorted by start, longer first): how many events contain it. */
function depths(events: readonly ProfilerEvent[]): number[] {
  const open: ProfilerEvent[] = [];
  return events.map((e) => {
    while (open.length && open[open.length - 1].endMs <= e.startMs) open.pop();
    const d = open.length;
    open.push(e);
    return d;
  });
}

/** The page for `events`, with `table` (keyAverages().table()) under the timeline. */
export function timelineHtml(events: readonly ProfilerEvent[], title: string, table: string): string {
  const sorted = [...events].sort((a, b) => a.startMs - b.startMs || (b.endMs - b.startMs) - (a.endMs - a.startMs));
  const t0 = Math.min(...sorted.map((e) => e.startMs)), t1 = Math.max(...sorted.map((e) => e.endMs));
  const scale = (WIDTH - LEFT - 10) / Math.max(1e-6, t1 - t0);
  const parts: string[] = [];
  let y = 10;
  for (const device of [...new Set(sorted.map((e) => e.device))]) {
    const lane = sorted.filter((e) => e.device === device);
    const depth = depths(lane);
    const rows = Math.max(...depth) + 1;
    parts.push(`<text x="6" y="${y + 15}" class="lane">${esc(device === 'cpu' ? 'CPU' : device === 'webgpu' ? 'WebGPU' : device)}</text>`);
    lane.forEach((e, i) => {
      const x = LEFT + (e.startMs - t0) * scale, w = Math.max(1, (e.endMs - e.startMs) * scale), ry = y + depth[i] * ROW;
      const tip = [`${e.name}  ${(e.endMs - e.startMs).toFixed(3)} ms`, e.scope ? `scope ${e.scope}` : '', e.inputShapes ? `inputs ${JSON.stringify(e.inputShapes)}` : '',
        sourceOf(e) ? `source ${sourceOf(e)}` : '', ...(e.covers ?? []).map((c) => `covers ${c.op}${c.scope ? ` in ${c.scope}` : ''}`)].filter(Boolean).join('\n');
      parts.push(`<g><title>${esc(tip)}</title><rect class="ev" x="${x.toFixed(2)}" y="${ry}" width="${w.toFixed(2)}" height="${ROW - 3}" fill="${COLORS[e.kind]}"/>` +
        (w > 7 * e.name.length ? `<text x="${(x + 3).toFixed(2)}" y="${ry + 14}">${esc(e.name)}</text>` : '') + '</g>');
    });
    y += rows * ROW + LANE_GAP;
  }
  const axis = [0, 0.25, 0.5, 0.75, 1].map((f) => `<text x="${(LEFT + f * (WIDTH - LEFT - 10)).toFixed(0)}" y="${y}" class="axis"${f === 1 ? ' text-anchor="end"' : ''}>${(f * (t1 - t0)).toFixed(2)} ms</text>`);
  return `<!doctype html><html><head><meta charset="utf-8"><title>${esc(title)}</title><style>
body{font-family:Helvetica,Arial,sans-serif;margin:16px;color:#0f172a} h1{font-size:17px;margin:0 0 8px}
svg text{font-size:11px;pointer-events:none} .lane{font-weight:bold;font-size:12px} .axis{fill:#64748b}
rect.ev{stroke:#334155;stroke-width:.5} pre{font-size:11px;background:#f8fafc;padding:8px;border:1px solid #e2e8f0;overflow:auto}
.legend span{display:inline-block;padding:1px 8px;margin-right:6px;border:1px solid #334155;font-size:11px}
</style></head><body><h1>${esc(title)}</h1><div class="legend">${Object.entries(COLORS).map(([k, c]) => `<span style="background:${c}">${k}</span>`).join('')}</div>
<svg width="${WIDTH}" height="${y + 10}" xmlns="http://www.w3.org/2000/svg">${parts.join('')}${axis.join('')}</svg>
<pre>${esc(table)}</pre></body></html>
`;
}
