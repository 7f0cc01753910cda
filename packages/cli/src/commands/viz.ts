// `kiln viz <file.tsgraph | model.ts>`: the graph as Graphviz DOT (default) or one self-contained
// HTML page; a model file is compiled in memory first (compile.ts). Invariant: both renderers
// draw the same model (@kiln/ir-spec's viz/model.ts): one box per graph node.

import { writeFileSync } from 'node:fs';
import { flagBool, flagString, type FlagSpec, type Parsed } from '../args.js';
import { UsageError } from '../errors.js';
import { Progress } from '../progress.js';
import { COMPILE_FLAGS, compileModelFile, loadModelFile } from './compile.js';
import { autogradGraph, makeDot, Tensor } from 'kiln';
import { exampleInput } from '../input-spec.js';
import type { VizBlock, VizNode } from '@kiln/ir-spec';
import { readGraphFile } from '../read-graph.js';
import { countOps, toDot, toHtml, vizModel } from '@kiln/ir-spec';

export const VIZ_FLAGS: Record<string, FlagSpec> = {
  // A model file is compiled first, with compile's flags.
  ...Object.fromEntries(['export', 'trace', 'input', 'weights', 'opt-level', 'quiet'].map((k) => [k, COMPILE_FLAGS[k]])),
  format: { type: 'string' },
  output: { type: 'string', short: 'o' },
  params: { type: 'boolean' },
  autograd: { type: 'boolean' },
  verbose: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

export const VIZ_HELP = `Usage: kiln viz <file.tsgraph | model.ts> [options]

Draws the graph: nodes with their op, output shapes and module scope, if/loop regions as
clusters, fused kernels outlined. A model file is compiled first (in memory) with the compile
options --export, --trace, --input, --weights, -O0/-O1/-O2 (see kiln compile --help).

Options:
  --format <dot|html>       Graphviz DOT text (default) or a self-contained HTML page
  -o, --output <file>       write to a file instead of stdout
  --params                  draw the weight inputs too
  --autograd                a model file: draw the autograd graph of one eager forward
                            (torchviz's make_dot: backward nodes, parameters by name,
                            saved tensors with their shapes) instead of the compiled graph
  --verbose                 show stack traces on errors
  -h, --help                this help

Examples:
  kiln viz model.tsgraph | dot -Tsvg > model.svg
  kiln viz model.ts --input x:f32[N,3,32,32] -O1 > model.dot
  kiln viz model.tsgraph --format html -o model.html
  kiln viz --autograd model.ts --format html -o autograd.html`;

/** Runs `kiln viz`; returns the exit code. */
export async function vizCommand(p: Parsed): Promise<number> {
  if (p.positionals.length !== 1) throw new UsageError(p.positionals.length ? `expected one .tsgraph file, got ${p.positionals.length}` : 'missing the .tsgraph file', 'viz');
  const format = flagString(p, 'format') ?? 'dot';
  if (format !== 'dot' && format !== 'html') throw new UsageError(`--format must be dot or html, got '${format}'`, 'viz');
  const path = p.positionals[0];
  if (flagBool(p, 'autograd')) return vizAutograd(p, path, format);
  const graph = /\.(m|c)?[tj]sx?$/.test(path)
    ? (await compileModelFile(path, p, new Progress(flagBool(p, 'quiet')), 'viz')).graph
    : readGraphFile(path).graph;
  const model = vizModel(graph, { params: flagBool(p, 'params') });
  const title = `@${graph.name} (${path})`;
  const text = format === 'dot' ? toDot(model, title) : toHtml(model, title);
  const out = flagString(p, 'output');
  if (out) {
    writeFileSync(out, text);
    process.stderr.write(`wrote ${out}: ${countOps(model)} nodes\n`);
  } else {
    process.stdout.write(text);
  }
  return 0;
}

/** `kiln viz --autograd model.ts`: the autograd graph of one eager forward on an example input. */
async function vizAutograd(p: Parsed, path: string, format: 'dot' | 'html'): Promise<number> {
  if (!/\.(m|c)?[tj]sx?$/.test(path)) throw new UsageError(`--autograd draws an eager model's autograd graph: give a model file (.ts/.js), not '${path}'`, 'viz');
  const loaded = await loadModelFile(path, p, new Progress(flagBool(p, 'quiet')));
  const result: unknown = loaded.model.forward(...loaded.specs.map((s) => exampleInput(s)));
  const outputs = [result].flat(4).filter((t): t is Tensor => t instanceof Tensor);
  if (!outputs.some((t) => t.gradFn)) throw new UsageError(`--autograd: the forward of ${path} recorded no autograd graph (no output depends on a parameter that requires grad)`, 'viz');
  const params = loaded.model.namedParameters();
  const title = `autograd graph of ${path}`;
  let text: string;
  if (format === 'dot') {
    text = makeDot(outputs, { params });
  } else {
    const kinds = { backward: 'op', leaf: 'param', output: 'output', saved: 'arg' } as const;
    const nodes: VizNode[] = autogradGraph(outputs, { params }).map((n) => ({
      id: n.id, kind: kinds[n.kind], label: n.label, types: n.shape ? [`[${n.shape.join(', ')}]`] : [], fused: false, regions: [], from: n.from,
    }));
    const block: VizBlock = { id: 'autograd', label: title, nodes };
    text = toHtml(block, title);
  }
  const out = flagString(p, 'output');
  if (out) {
    writeFileSync(out, text);
    process.stderr.write(`wrote ${out}\n`);
  } else {
    process.stdout.write(text);
  }
  return 0;
}
