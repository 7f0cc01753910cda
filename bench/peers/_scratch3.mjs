import { LEVELS, runPipeline } from '@kiln/compiler';
import { printGraph } from '@kiln/ir-spec';
import { MODELS, traceBatchDynamic } from './cpu-models.mjs';
const name = process.argv[2] ?? 'MLP 784-512-512-10', lvl = Number(process.argv[3] ?? 2);
const { model } = MODELS[name].kiln();
const g = runPipeline(traceBatchDynamic(model, MODELS[name].input), { passes: LEVELS[lvl] }).graph;
console.log(LEVELS[lvl].join(' '));
console.log(printGraph(g).split('\n').filter(l=>!/^\s*$/.test(l)).map(l=>l.slice(0,300)).join('\n'));
