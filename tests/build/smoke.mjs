// Smoke run of the BUILT package: plain Node resolves 'kiln' through node_modules to
// packages/kiln/dist (no vitest aliases, no TypeScript). Prints one JSON line that
// tests/build.test.ts checks.

import * as kiln from 'kiln';
import { tensor, nn, F, optim, autograd, manualSeed, randn, matmul, setNumThreads } from 'kiln';

// Top-level names API.md promises from 'kiln'.
const API = ['tensor', 'zeros', 'ones', 'full', 'randn', 'rand', 'arange', 'manualSeed', 'Tensor',
  'noGrad', 'inferenceMode', 'enableGrad', 'autograd', 'nn', 'F', 'optim', 'utils'];
const missing = API.filter((name) => !(name in kiln));

// d/dw sum(w * w) = 2w.
const w = tensor([1, 2, 3], { requiresGrad: true });
const [gw] = autograd.grad(w.mul(w).sum(), [w]);

// A tiny classifier: Linear(3, 2) fitted to two labelled points with Adam.
manualSeed(0);
const model = new nn.Linear(3, 2);
const opt = new optim.Adam(model.parameters(), { lr: 0.1 });
const x = tensor([[1, 0, -1], [-1, 2, 0.5]]);
const y = tensor([0, 1], { dtype: 'int32' });
const losses = [];
for (let step = 0; step < 20; step++) {
  opt.zeroGrad();
  const loss = F.crossEntropy(model.forward(x), y);
  loss.backward();
  opt.step();
  losses.push(loss.item());
}
const nParams = [...model.parameters()].reduce((n, p) => n + p.numel(), 0);

// A product big enough for the CPU kernels' worker threads: they must not keep this process
// alive once the script ends (the test times out otherwise).
setNumThreads(2);
const big = randn([320, 320]);
for (let i = 0; i < 5; i++) { matmul(big, big); await new Promise((r) => setTimeout(r, 10)); }

console.log(JSON.stringify({ missing, grad: Array.from(gw.toArray()), nParams, firstLoss: losses[0], lastLoss: losses[losses.length - 1] }));
