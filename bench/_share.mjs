const { jit, manualSeed, nn, quantization, randn, profiler } = await import('kiln');
const { ResearchModel } = await import('../examples/seed/models.mjs');
manualSeed(0);
const mlp = process.argv[2] === 'mlp';
const model = mlp ? new nn.Sequential(new nn.Linear(784, 512), new nn.ReLU(), new nn.Linear(512, 512), new nn.ReLU(), new nn.Linear(512, 10)).eval() : new ResearchModel().eval();
const x = mlp ? randn([1, 784]) : randn([1, 3, 32, 32]);
const q = quantization.quantizeDynamic(model, { layers: [nn.Linear] });
for (const [name, m] of [['f32', model], ['int8', q]]) {
  const fast = jit.optimizeForInference(jit.trace(m, [x], { warn: false }));
  for (let i = 0; i < 30; i++) fast.forward(x);
  const agg = new Map();
  for (let r = 0; r < 400; r++) {
    const p = profiler.profile({}, () => fast.forward(x));
    for (const row of p.keyAverages()) agg.set(row.name ?? row.key, (agg.get(row.name ?? row.key) ?? 0) + row.totalMs);
  }
  console.log(name, [...agg].map(([k, v]) => `${k}: ${(v / 400).toFixed(3)}`).join('\n  '));
}
