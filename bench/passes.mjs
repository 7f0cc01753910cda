// The optimization-pipeline benchmark: seed ResearchModel (eval mode) traced, saved as
// `.tsgraph` at -O0 (the traced graph) and at -O2 (jit.optimizeForInference), each loaded in the
// runtime alone and run on the CPU at batch 1 and 32. The two models run alternately in one loop
// (side by side, same machine state), so the speedup samples are per-pair ratios. Peak
// intermediate memory is the runtime's own figure (RunStats.peakIntermediateBytes).
// Run alone: `node bench/passes.mjs [--quick]` (after `npm run build`); bench/run.mjs includes it.

import { parseArgs } from 'node:util';
import { jit, manualSeed, randn } from 'kiln';
import { ResearchModel, seedInputShape } from '../examples/seed/models.mjs';
import { isMain, summarize } from './stats.mjs';

/** Kernel nodes of a graph (tensor ops; constants and other structural nodes excluded), regions included. */
const STRUCTURAL = new Set(['constant', 'scalar', 'scalar_op', 'dim', 'item', 'tuple', 'tuple_get', 'if', 'loop']);
function countNodes(block) {
  return block.nodes.reduce((n, node) => n + (STRUCTURAL.has(node.op) ? 0 : 1) + node.regions.reduce((m, r) => m + countNodes(r), 0), 0);
}

/**
 * Rows for bench/run.mjs: latency at -O0 and -O2, the speedup, peak intermediate memory and
 * node counts, per batch size.
 * @param {{ quick?: boolean, batches?: number[], log?: (s: string) => void }} [opts]
 * @example const rows = await benchPasses({ quick: true });
 */
export async function benchPasses({ quick = false, batches = [1, 32], log = () => {} } = {}) {
  manualSeed(0);
  const model = new ResearchModel();
  model.eval();
  const traced = jit.trace(model, [randn(seedInputShape(2))], { dynamicAxes: { 0: { 0: 'N' } } });
  const t0 = performance.now();
  const fast = jit.optimizeForInference(traced);
  const compileMs = performance.now() - t0;
  const o0 = await jit.load(traced.toBytes());
  const o2 = await jit.load(fast.toBytes());
  const rows = [
    { name: 'ResearchModel -O2 pipeline (all passes)', unit: 'ms', samples: [compileMs] },
    { name: 'ResearchModel kernel nodes -O0', unit: 'nodes', samples: [countNodes(traced.graph.body)] },
    { name: 'ResearchModel kernel nodes -O2', unit: 'nodes', samples: [countNodes(fast.graph.body)] },
  ];
  for (const b of batches) {
    log(`passes: ResearchModel -O0 vs -O2, batch ${b} ...`);
    const x = randn(seedInputShape(b));
    o0.forward(x); o2.forward(x); // warm-up
    const ms0 = [], ms2 = [], ratio = [];
    const runs = quick ? 3 : b === 1 ? 30 : 7;
    for (let i = 0; i < runs; i++) {
      // Alternate which goes first, so neither always runs on a warmer cache.
      const order = i % 2 ? [o2, o0] : [o0, o2];
      const t = new Map();
      for (const m of order) {
        const s = performance.now();
        m.forward(x);
        t.set(m, performance.now() - s);
      }
      ms0.push(t.get(o0)); ms2.push(t.get(o2)); ratio.push(t.get(o0) / t.get(o2));
    }
    const kib = (m) => m.model.stats.peakIntermediateBytes / 1024;
    rows.push(
      { name: `ResearchModel runtime CPU -O0, batch ${b}`, unit: 'ms', samples: ms0 },
      { name: `ResearchModel runtime CPU -O2, batch ${b}`, unit: 'ms', samples: ms2 },
      { name: `ResearchModel -O2 speedup over -O0 (paired), batch ${b}`, unit: '×', samples: ratio },
      { name: `ResearchModel peak intermediate memory -O0, batch ${b}`, unit: 'KiB', samples: [kib(o0)] },
      { name: `ResearchModel peak intermediate memory -O2, batch ${b}`, unit: 'KiB', samples: [kib(o2)] },
      { name: `ResearchModel peak memory reduction -O0/-O2, batch ${b}`, unit: '×', samples: [kib(o0) / kib(o2)] },
    );
  }
  return rows;
}

if (isMain(import.meta.url)) {
  const { values } = parseArgs({ options: { quick: { type: 'boolean', default: false } } });
  const rows = await benchPasses({ quick: values.quick, log: (s) => process.stderr.write(`${s}\n`) });
  for (const r of rows) {
    const s = summarize(r.samples);
    process.stdout.write(`${r.name}: median ${s.median.toFixed(3)} ${r.unit} (min ${s.min.toFixed(3)}, max ${s.max.toFixed(3)}, ${s.runs} runs)\n`);
  }
}
