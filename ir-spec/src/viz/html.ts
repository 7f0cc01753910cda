// One self-contained HTML page drawing a VizBlock tree as SVG (no network; a three-line script
// only records how many op boxes the browser laid out, for tests): nodes in rows by dependency
// depth, regions as nested dashed boxes inside their if/loop node, fused kernels outlined. Invariant: every op node of the model is
// one `<g class="node op">` element, and the header's data-nodes count is countOps(model).

import { countOps, type VizBlock, type VizNode } from './model.js';

const NODE_W = 170, LINE_H = 14, PAD = 12, GAP_X = 24, GAP_Y = 34, HEADER = 22;

interface Box { x: number; y: number; w: number; h: number }
interface Placed { node: VizNode; box: Box; regions: { block: VizBlock; box: Box }[] }

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

function textLines(n: VizNode): string[] {
  return [n.label, ...n.types, ...(n.scope ? [n.scope] : [])];
}

/** Size of a block's layout (without placing). */
function measureBlock(b: VizBlock): { w: number; h: number } {
  const rows = rowsOf(b);
  let w = 0, h = 0;
  for (const row of rows) {
    const sizes = row.map(measureNode);
    w = Math.max(w, sizes.reduce((a, s) => a + s.w, 0) + GAP_X * (row.length - 1));
    h += Math.max(...sizes.map((s) => s.h)) + GAP_Y;
  }
  return { w: w + 2 * PAD, h: h - GAP_Y + 2 * PAD + HEADER };
}

function measureNode(n: VizNode): { w: number; h: number } {
  const base = { w: NODE_W, h: 10 + LINE_H * textLines(n).length };
  if (!n.regions.length) return base;
  const inner = n.regions.map(measureBlock);
  return {
    w: Math.max(base.w, inner.reduce((a, s) => a + s.w, 0) + GAP_X * (inner.length - 1) + 2 * PAD),
    h: base.h + Math.max(...inner.map((s) => s.h)) + PAD,
  };
}

/** Nodes in rows: a node sits one row below the lowest node of its block it reads from. */
function rowsOf(b: VizBlock): VizNode[][] {
  const rank = new Map<string, number>();
  const rows: VizNode[][] = [];
  for (const n of b.nodes) {
    const r = Math.max(-1, ...n.from.map((f) => rank.get(f) ?? -1)) + 1;
    rank.set(n.id, r);
    (rows[r] ??= []).push(n);
  }
  return rows.filter(Boolean);
}

function placeBlock(b: VizBlock, x: number, y: number, w: number, out: Placed[]): void {
  let cy = y + PAD + HEADER;
  for (const row of rowsOf(b)) {
    const sizes = row.map(measureNode);
    const rowW = sizes.reduce((a, s) => a + s.w, 0) + GAP_X * (row.length - 1);
    let cx = x + (w - rowW) / 2;
    row.forEach((n, k) => {
      const box = { x: cx, y: cy, w: sizes[k].w, h: sizes[k].h };
      const regions: Placed['regions'] = [];
      if (n.regions.length) {
        const inner = n.regions.map(measureBlock);
        const innerW = inner.reduce((a, s) => a + s.w, 0) + GAP_X * (inner.length - 1);
        let rx = box.x + (box.w - innerW) / 2;
        const ry = box.y + 10 + LINE_H * textLines(n).length;
        n.regions.forEach((r, j) => {
          regions.push({ block: r, box: { x: rx, y: ry, w: inner[j].w, h: inner[j].h } });
          placeBlock(r, rx, ry, inner[j].w, out);
          rx += inner[j].w + GAP_X;
        });
      }
      out.push({ node: n, box, regions });
      cx += sizes[k].w + GAP_X;
    });
    cy += Math.max(...sizes.map((s) => s.h)) + GAP_Y;
  }
}

const FILL: Record<VizNode['kind'], string> = { op: '#eef3fb', input: '#e3f4e1', param: '#f4f1e1', output: '#fbe9e7', arg: '#ffffff', yield: '#ffffff' };

function nodeSvg(p: Placed): string {
  const { node: n, box: b } = p;
  const cls = `node ${n.kind}${n.fused ? ' fused' : ''}`;
  const title = [n.label, ...n.types, n.scope ? `scope ${n.scope}` : '', n.loc ? `at ${n.loc}` : ''].filter(Boolean).join('\n');
  const text = textLines(n).map((t, k) => `<text x="${b.x + b.w / 2}" y="${b.y + 16 + k * LINE_H}" class="${k === 0 ? 'op-name' : k <= n.types.length ? 'type' : 'scope'}">${esc(t)}</text>`).join('');
  const regions = p.regions.map((r) => `<g class="region"><rect x="${r.box.x}" y="${r.box.y}" width="${r.box.w}" height="${r.box.h}" rx="6"/><text x="${r.box.x + 8}" y="${r.box.y + 15}" class="region-label">${esc(r.block.label)}</text></g>`).join('');
  return `<g class="${cls}" data-id="${n.id}"><title>${esc(title)}</title><rect x="${b.x}" y="${b.y}" width="${b.w}" height="${b.h}" rx="${n.kind === 'op' ? 6 : 16}" fill="${FILL[n.kind]}"/>${text}</g>${regions}`;
}

/** The HTML page for a drawing model. */
export function toHtml(model: VizBlock, title: string): string {
  const size = measureBlock(model);
  const placed: Placed[] = [];
  placeBlock(model, 0, 0, size.w, placed);
  const at = new Map(placed.map((p) => [p.node.id, p.box]));
  const edges = placed.flatMap((p) => p.node.from.map((f) => {
    const a = at.get(f)!, b = p.box;
    const x1 = a.x + a.w / 2, y1 = a.y + a.h, x2 = b.x + b.w / 2, y2 = b.y;
    return `<path d="M${x1},${y1} C${x1},${y1 + 20} ${x2},${y2 - 20} ${x2},${y2}" marker-end="url(#arrow)"/>`;
  }));
  // Region boxes are drawn under their nodes' contents: nodes first sorted outer to inner by area.
  const order = [...placed].sort((p, q) => q.box.w * q.box.h - p.box.w * p.box.h);
  const ops = countOps(model);
  const fused = placed.filter((p) => p.node.fused).length;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>
<style>
body { font-family: Helvetica, Arial, sans-serif; margin: 0; color: #0f172a; }
header { padding: 10px 16px; border-bottom: 1px solid #cbd5e1; background: #f8fafc; }
header h1 { font-size: 16px; margin: 0 0 4px; }
main { overflow: auto; padding: 16px; }
svg text { font-size: 11px; text-anchor: middle; }
svg .op-name { font-weight: bold; }
svg .type { fill: #334155; font-family: monospace; }
svg .scope { fill: #64748b; font-style: italic; }
svg .node rect { stroke: #64748b; }
svg .node.fused rect { stroke: #c2410c; stroke-width: 3; fill: #fff3e8; }
svg .node.arg rect, svg .node.yield rect { stroke-dasharray: 4 3; }
svg .region rect { fill: none; stroke: #94a3b8; stroke-dasharray: 6 4; }
svg .region-label { text-anchor: start; fill: #64748b; font-size: 10px; }
svg .edges path { fill: none; stroke: #475569; stroke-width: 1.2; }
</style></head>
<body>
<header><h1>${esc(title)}</h1><div id="summary" data-nodes="${ops}" data-fused="${fused}">${ops} nodes, ${fused} fused kernels</div></header>
<main><svg xmlns="http://www.w3.org/2000/svg" width="${Math.ceil(size.w)}" height="${Math.ceil(size.h)}" viewBox="0 0 ${Math.ceil(size.w)} ${Math.ceil(size.h)}">
<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#475569"/></marker></defs>
${order.map(nodeSvg).join('\n')}
<g class="edges">${edges.join('')}</g>
</svg></main>
<script>
// Records how many op boxes the browser actually laid out (tests read data-rendered).
const drawn = [...document.querySelectorAll('g.node.op')].filter((g) => { const b = g.getBBox(); return b.width > 0 && b.height > 0; }).length;
document.getElementById('summary').dataset.rendered = String(drawn);
</script>
</body></html>
`;
}
