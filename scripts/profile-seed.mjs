// Profiles the seed ResearchModel eagerly and compiled (-O2, CPU) in one profile and writes the
// timeline page (docs/profile-seed.html) and the Chrome trace (/tmp/profile-seed.trace.json);
// prints the tables. The README's Profiling screenshot is this page rendered by headless Chromium:
//   node scripts/profile-seed.mjs && chromium --headless --screenshot=docs/profile-seed.png \
//     --window-size=1440,900 docs/profile-seed.html
import { jit, noGrad, profiler, randn, manualSeed } from 'kiln';
import { load } from '@kiln/runtime';
import { ResearchModel } from '../examples/seed/models.mjs';

manualSeed(0);
const model = new ResearchModel().eval();
const x = randn([8, 3, 32, 32]);
const fast = jit.optimizeForInference(jit.trace(model, [x], { warn: false }));
const compiled = await load(fast.toBytes(), { backend: 'cpu' });
const input = [{ data: x.data, shape: [...x.shape], dtype: 'float32' }];
noGrad(() => model.forward(x));
await compiled.run(input);

const prof = await profiler.profile({ recordShapes: true, profileMemory: true }, async (p) => {
  p.recordFunction('eager forward', () => noGrad(() => model.forward(x)));
  await p.recordFunction('compiled -O2 run', () => compiled.run(input));
});
console.log(prof.keyAverages({ groupBy: 'scope' }).table({ sortBy: 'total', rowLimit: 12 }));
prof.exportHtml('docs/profile-seed.html', 'ResearchModel, batch 8: eager forward, then the -O2 graph (CPU)');
prof.exportChromeTrace('/tmp/profile-seed.trace.json'); // open in https://ui.perfetto.dev
