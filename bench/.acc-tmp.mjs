import { tensor, nn, F, optim, noGrad, manualSeed, randperm } from 'kiln';
import { loadDigits, digitsModel } from '../examples/digits/train.mjs';
const data = loadDigits();
manualSeed(0);
const model = digitsModel();
const opt = new optim.Adam(model.parameters(), { lr: 1e-3 });
const batchOf = (rows) => {
  const b = rows.length, xb = new Float32Array(b * 64), yb = new Int32Array(b);
  rows.forEach((r, i) => { xb.set(data.x.subarray(r * 64, r * 64 + 64), i * 64); yb[i] = data.y[r]; });
  return { x: tensor(xb, { shape: [b, 1, 8, 8] }), y: tensor(yb, { shape: [b] }) };
};
const t0 = performance.now();
for (let e = 0; e < 15; e++) {
  model.train();
  const order = randperm(1437);
  for (let b = 0; b < 1437; b += 32) {
    const batch = batchOf(Array.from(order.slice(b, Math.min(1437, b + 32))));
    opt.zeroGrad();
    const loss = F.crossEntropy(model.forward(batch.x), batch.y);
    loss.backward();
    opt.step();
  }
}
console.log('train s', ((performance.now() - t0) / 1000).toFixed(1));
const test = batchOf(Array.from({ length: 360 }, (_, i) => 1437 + i));
const acc = () => noGrad(() => model.forward(test.x).argmax(1).eq(test.y).sum().item()) / 360;
model.eval();
console.log('eval-mode acc', acc());
const train = batchOf(Array.from({ length: 1437 }, (_, i) => i));
console.log('eval-mode train acc', noGrad(() => model.forward(train.x).argmax(1).eq(train.y).sum().item()) / 1437);
// BN with batch stats over the test set, dropout off
for (const m of model.modules()) if (m instanceof nn.BatchNorm2d) m.train();
console.log('batch-stat BN acc', acc());
const bn = [...model.modules()].filter((m) => m instanceof nn.BatchNorm2d)[0];
console.log('rm', Array.from(bn.running_mean.toArray()).slice(0, 4), 'rv', Array.from(bn.running_var.toArray()).slice(0, 4));
