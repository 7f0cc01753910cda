import { randn, tensor, noGrad, manualSeed, withObserver, optim, F, randint } from 'kiln';
import { digitsModel } from '../examples/digits/train.mjs';
manualSeed(0);
const model = digitsModel();
const opt = new optim.Adam(model.parameters(), { lr: 1e-3 });
const x = randn([32, 1, 8, 8]);
const y = tensor(Int32Array.from({ length: 32 }, (_, i) => i % 10), { shape: [32] });
const step = () => { opt.zeroGrad(); const l = F.crossEntropy(model.forward(x), y); l.backward(); opt.step(); };
for (let i = 0; i < 20; i++) step();
const R = 30;
const acc = new Map(), cnt = new Map();
let t0 = performance.now();
for (let r = 0; r < R; r++) {
  let last = performance.now();
  withObserver({ onOp(def, ins, attrs, outs) { const now = performance.now(); const k = def.name + ' ' + ins.map(t => t ? JSON.stringify(t.shape) : 'null').join(' '); acc.set(k, (acc.get(k) ?? 0) + (now - last) / R); cnt.set(k, (cnt.get(k) ?? 0) + 1 / R); last = now; } }, step);
}
const per = (performance.now() - t0) / R;
let tot = 0;
const rows = [...acc].sort((a, b) => b[1] - a[1]);
for (const [k, v] of rows.slice(0, 40)) { console.log(v.toFixed(3).padStart(8), String(Math.round(cnt.get(k))).padStart(3), k); }
for (const [, v] of rows) tot += v;
console.log('total attributed', tot.toFixed(2), 'ms/step; wall', per.toFixed(2), 'ms/step; 45*15 steps =', (per * 675 / 1000).toFixed(1), 's');
