const { jit, manualSeed, nn, quantization, randn } = await import('kiln');
const { ResearchModel } = await import('../examples/seed/models.mjs');
const which = process.argv[2] ?? 'mlp';
manualSeed(0);
const model = which === 'mlp' ? new nn.Sequential(new nn.Linear(784, 512), new nn.ReLU(), new nn.Linear(512, 512), new nn.ReLU(), new nn.Linear(512, 10)).eval() : new ResearchModel().eval();
const x = which === 'mlp' ? randn([1, 784]) : randn([1, 3, 32, 32]);
const q = quantization.quantizeDynamic(model, { layers: [nn.Linear] });
const fast = jit.optimizeForInference(jit.trace(model, [x], { warn: false }));
const fastQ = jit.optimizeForInference(jit.trace(q, [x], { warn: false }));
const mode = process.argv[3] ?? 'both';
function time(f, n) { for (let i = 0; i < 20; i++) f(); const t = performance.now(); for (let i = 0; i < n; i++) f(); return (performance.now() - t) / n; }
const n = Number(process.env.N ?? (which === "mlp" ? 2000 : 200));
for (let r = 0; r < 3; r++) {
  if (mode !== 'q') console.log('f32', time(() => fast.forward(x), n).toFixed(4));
  if (mode !== 'f') console.log('int8', time(() => fastQ.forward(x), n).toFixed(4));
}
