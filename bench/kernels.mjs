// Kernel throughput of the CPU backend, measured through the public API of the BUILT package
// (`npm run build` first): a 512×512×512 matmul and the seed CNN's second convolution (batch 1,
// 64→128 channels, 16×16, 3×3, padding 1), plus the batch-1 linear 8192→512 of its classifier.
// Each row reports GFLOP/s per run, counting the flops of the direct algorithm (2·M·N·K for
// products, 2·Cout·Cin·kh·kw·OH·OW for the convolution — which runs as Winograd F(2×2, 3×3) with
// 2.25× fewer multiplications, so its figure is an effective rate). `node bench/kernels.mjs`
// prints the medians; bench/run.mjs imports benchKernels().

import { randn, matmul, manualSeed, noGrad, F } from 'kiln';
import { isMain, summarize, timeRuns } from './stats.mjs';

/**
 * Times `fn` after warm-up calls and returns the GFLOP/s of each run.
 * @param {() => unknown} fn
 * @param {number} flops flops of one call
 * @param {{ warmup?: number, runs?: number, minMs?: number }} [opts] at least `runs` runs and `minMs` of timed work
 * @returns {number[]} GFLOP/s of each run
 */
function rates(fn, flops, { warmup = 3, runs = 9, minMs = 1500 } = {}) {
  return timeRuns(fn, { warmup, minRuns: runs, maxRuns: Infinity, budgetMs: minMs }).map((ms) => flops / (ms * 1e6));
}

/**
 * Runs the kernel benchmarks.
 * @param {{ quick?: boolean }} [opts] quick: fewer runs (for smoke tests)
 * @returns {{ name: string, unit: string, samples: number[] }[]} one row per kernel, GFLOP/s per run
 * @example const rows = benchKernels(); // [{ name: 'matmul 512×512×512', unit: 'GFLOP/s', samples: [...] }, ...]
 */
export function benchKernels({ quick = false } = {}) {
  manualSeed(0);
  const timing = quick ? { warmup: 1, runs: 3, minMs: 0 } : {};
  return noGrad(() => {
    const a = randn([512, 512]), b = randn([512, 512]);
    const mm = rates(() => matmul(a, b), 2 * 512 ** 3, timing);

    const x = randn([1, 64, 16, 16]), w = randn([128, 64, 3, 3]), bias = randn([128]);
    const conv = rates(() => F.conv2d(x, w, bias, { padding: 1 }), 2 * 128 * 64 * 9 * 16 * 16, timing);

    const v = randn([1, 8192]), fc = randn([512, 8192]), fcb = randn([512]);
    const lin = rates(() => F.linear(v, fc, fcb), 2 * 8192 * 512, timing);

    return [
      { name: 'matmul 512×512×512', unit: 'GFLOP/s', samples: mm },
      { name: 'seed CNN conv2 (batch 1, 64→128, 16×16, 3×3, pad 1)', unit: 'GFLOP/s', samples: conv },
      { name: 'seed CNN linear 8192→512 (batch 1)', unit: 'GFLOP/s', samples: lin },
    ];
  });
}

if (isMain(import.meta.url)) {
  const quick = process.argv.includes('--quick');
  for (const row of benchKernels({ quick })) {
    const { median, min, max, runs } = summarize(row.samples);
    process.stdout.write(`${row.name}: median ${median.toFixed(2)} ${row.unit} (min ${min.toFixed(2)}, max ${max.toFixed(2)}, ${runs} runs)\n`);
  }
}
