// jit.script coverage a PyTorch user expects (issue 12, part B): arrow functions over static
// arrays (map, forEach, reduce, filter, arrays of modules, local closures), `for` loops counting
// down or with any step (static and run-time bounds, run-time steps), arrays built by push in
// unrolled loops, branches whose shapes differ under a static condition, and recursion over
// data known when compiling. Each model agrees with eager (from its runtime text and from its
// .ts file), saves to .tsgraph and runs from the file with @kiln/runtime alone; each refusal is
// a ScriptError at file:line:col with a caret under the construct.
import { describe, it, expect } from 'vitest';
import { mkdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { load } from '@kiln/runtime';
import { verifyGraph } from '@kiln/ir-spec';
import { jit, manualSeed, randn, noGrad, type Tensor, type nn } from 'kiln';
import {
  ArrayMethods, ArrayQueries, BoundedRefine, LoopClosures, ClosureState, Collect, CollectRuntime, DataRecursion, DeepRecursion, EscapingClosure, FileRecursion, ModuleArray,
  MapLibrary, EmptyReduce, DoublingToN, EscapingUpdate, MovingBound, PassedClosure, ZeroStep, RuntimeFilter, RuntimeShapes, StaticShapes, Steps, TreeModel, WrongWay,
} from './script-models/coverage-b.js';
import { caretUnder, scriptErrorOf } from './helpers/script-errors.js';

// WebGPU in Node runs on SwiftShader here (DESIGN.md §7).
process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json';
process.env.XDG_RUNTIME_DIR ??= '/tmp/kiln-xdg';
mkdirSync(process.env.XDG_RUNTIME_DIR, { recursive: true });

const FILE = fileURLToPath(new URL('./script-models/coverage-b.ts', import.meta.url));

function close(got: { data: ArrayLike<number>; shape: readonly number[] }, want: Tensor): void {
  expect([...got.shape]).toEqual(want.shape);
  for (let i = 0; i < want.numel(); i++) expect(Math.abs(got.data[i] - want.data[i])).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(want.data[i])));
}

/** Scripted = eager for every argument list, and the saved graph run by the runtime alone = eager. */
async function agree(model: nn.Module, opts: jit.ScriptOptions, argLists: unknown[][]): Promise<jit.ScriptModule> {
  const s = jit.script(model, opts);
  for (const args of argLists) close(s.forward(...args) as Tensor, noGrad(() => model.forward(...args)) as Tensor);
  expect(verifyGraph(s.graph)).toBeUndefined();
  const runtime = await load(s.toBytes());
  for (const args of argLists) {
    const [y] = await runtime.run(args.map((a) => (typeof a === 'number' ? { data: Int32Array.of(a), shape: [], dtype: 'int32' as const } : a as Tensor)));
    close(y, noGrad(() => model.forward(...args)) as Tensor);
  }
  return s;
}

const count = (text: string, op: string) => text.match(new RegExp(`= ${op}\\(`, 'g'))?.length ?? 0;

const sources = [['runtime text', {}], ['.ts file (type checker)', { sourceFile: FILE }]] as const;

describe.each(sources)('jit.script coverage from the %s', (_, opts) => {
  it('map, forEach, reduce (with and without a seed) and a static filter over arrays of tensors, unrolled', async () => {
    manualSeed(1201);
    const s = await agree(new ArrayMethods(), opts, [[randn([2, 3])], [randn([5, 3])]]);
    const text = s.graph.toString();
    expect(count(text, 'loop')).toBe(0);
    expect(count(text, 'relu')).toBe(3);
  });

  it('some, every, find, findIndex and reduceRight with static predicates; reduce over a shape with a symbolic batch', async () => {
    manualSeed(1210);
    const s = await agree(new ArrayQueries(), opts, [[randn([2, 3])], [randn([3, 3])]]);
    expect(count(s.graph.toString(), 'if')).toBe(0);
  });

  it('an array of submodules mapped over, a local arrow function and a function expression called per element', async () => {
    manualSeed(1202);
    const s = await agree(new ModuleArray(), opts, [[randn([2, 4])], [randn([6, 4])]]);
    expect(count(s.graph.toString(), 'linear')).toBe(2);
  });

  it('closures read captured variables where they are called, and update them in straight-line code', async () => {
    manualSeed(1203);
    const m = new ClosureState();
    await agree(m, opts, [0, 1, 4].flatMap((n) => [[randn([2, 3]).abs(), n], [randn([2, 3]).abs().neg(), n]]));
  });

  it('a closure passed to another method, reading only values fixed when it was made', async () => {
    manualSeed(1204);
    await agree(new PassedClosure(), opts, [[randn([2, 3])], [randn([4, 3])]]);
  });

  it('for loops counting down and stepping by 2, 3, -2 and a run-time step, with static and run-time bounds', async () => {
    manualSeed(1205);
    const args: unknown[][] = [];
    for (const n of [0, 1, 2, 5, 8]) for (const k of [1, 2, 3]) args.push([randn([2, 4]), n, k]);
    const s = await agree(new Steps(), opts, args);
    const text = s.graph.toString();
    // Static bounds unroll; the five run-time loops are loop regions (two test their condition each trip).
    expect(count(text, 'loop')).toBe(5);
    expect(text.match(/= loop\(none, %\d+/g)?.length).toBe(2);
  });

  it('arrays built by push in loops with static trip counts (counting up and down), then cat and stack', async () => {
    manualSeed(1206);
    const s = await agree(new Collect(), opts, [[randn([2, 3])], [randn([3, 3])]]);
    expect(count(s.graph.toString(), 'linear')).toBe(3);
  });

  it('branches whose tensors differ in shape under a static condition lower only the taken branch', async () => {
    manualSeed(1207);
    const m = new StaticShapes();
    // x.shape[1] === 3 is static: each width compiles its own graph with one branch of the ternary.
    for (const w of [3, 5]) expect(count((await agree(m, opts, [[randn([2, w])], [randn([4, w])]])).graph.toString(), 'if')).toBe(0);
    m.pool = false; // a folded field changed: compiled again with the other branch of the if
    for (const w of [3, 5]) await agree(m, opts, [[randn([2, w])], [randn([4, w])]]);
  });

  it('recursion over a tree of modules stored on the model and over a static count is unrolled', async () => {
    manualSeed(1208);
    const m = new TreeModel();
    const s = await agree(m, opts, [[randn([2, 3])], [randn([3, 3])]]);
    // A tree of depth 3 with left children at every level and right children above the last two: 7 nodes.
    expect(count(s.graph.toString(), 'linear')).toBe(7);
    expect(s.graph.toString()).toContain('root.left.right.fc.weight');
  });
});

describe.each(sources)('jit.script coverage from the %s (more)', (_, opts) => {
  it('recursion under a data-dependent condition, bounded by a static count, becomes nested if regions', async () => {
    manualSeed(1212);
    const m = new BoundedRefine();
    const s = await agree(m, opts, [0.01, 0.3, 1, 5, 100].map((k) => [randn([2, 3]).mul(k)]));
    expect(count(s.graph.toString(), 'if')).toBe(4);
  });

  it('closures made in loops keep their own loop variable and are called after the loop', async () => {
    manualSeed(1213);
    const s = await agree(new LoopClosures(), opts, [[randn([2, 3])], [randn([5, 3])]]);
    expect(count(s.graph.toString(), 'linear')).toBe(3);
  });
});

describe('jit.script coverage that needs the .ts file', () => {
  it('a recursive function of the file over a static number', async () => {
    manualSeed(1209);
    await agree(new FileRecursion(), { sourceFile: FILE }, [[randn([2, 3])]]);
  });
});

describe('jit.script coverage on WebGPU', () => {
  it('the stepped loops and the unrolled recursion run from .tsgraph on WebGPU', async () => {
    manualSeed(1211);
    const steps = new Steps(), tree = new TreeModel();
    const a = await load(jit.script(steps, { inputs: [randn([2, 4]), 3, 2] }).toBytes(), { backend: 'webgpu' });
    const b = await load(jit.script(tree, { inputs: [randn([2, 3])] }).toBytes(), { backend: 'webgpu' });
    expect(a.backend).toBe('webgpu');
    for (const [n, k] of [[0, 1], [5, 2], [7, 3]]) {
      const x = randn([3, 4]);
      close((await a.run([x, n, k]))[0], noGrad(() => steps.forward(x, n, k)));
    }
    const x = randn([4, 3]);
    close((await b.run([x]))[0], noGrad(() => tree.forward(x)));
  }, 60_000);
});

function scriptError(m: nn.Module, ...args: unknown[]): jit.ScriptError {
  return scriptErrorOf(m, { sourceFile: FILE }, ...args);
}

/** The 1-based number of the first line containing `text` after the declaration of class `cls`. */
function lineOf(cls: string, text: string): number {
  const lines = readFileSync(FILE, 'utf8').split('\n');
  const from = lines.findIndex((l) => l.includes(`class ${cls} `));
  const i = lines.findIndex((l, k) => k > from && l.includes(text));
  expect(from >= 0 && i >= 0).toBe(true);
  return i + 1;
}

describe('jit.script coverage refusals', () => {
  const x = () => randn([2, 3]);
  const cases: [string, () => nn.Module, unknown[], string, string, RegExp][] = [ // what, model, args, text of the line, token under the caret, message
    ['an array pushed to in a run-time loop', () => new CollectRuntime(), [x(), 3], 'out.push(x.mul(i))', 'out.push',
      /'out\.push\(\.\.\.\)' grows the array 'out' in a loop whose trip count is only known at run time[\s\S]*no growable lists[\s\S]*trip count known when compiling/],
    ['tensors of different shapes from a data-dependent if', () => new RuntimeShapes(), [x()], 'if (x.sum().item() > 0) {', 'if',
      /the variable 'y' holds a tensor of type f32\[N\] on one side and f32\[N,3\] on the other of this data-dependent 'if'/],
    ['recursion whose depth a tensor decides', () => new DataRecursion(), [x()], 'return this.shrink(x.mul', 'this.shrink',
      /DataRecursion\.shrink calls itself inside an 'if' or loop on a run-time value, so how deep it recurses depends on run-time data[\s\S]*stopped after 32 levels/],
    ['static recursion deeper than the cap', () => new DeepRecursion(), [x()], 'this.count(x.add(1)', 'this.count',
      /DeepRecursion\.count recurses more than 32 levels deep when compiling[\s\S]*must end within that depth/],
    ['a filter predicate decided at run time', () => new RuntimeFilter(), [x()], '.filter((t) =>', '[x, x.neg()]',
      /the callback of \.filter\(\) gives a run-time value for element 0, so the length of the result would only be known at run time/],
    ['a closure reading a reassigned variable, called from another method', () => new EscapingClosure(), [x()], 'return fn(fn(x))', 'fn(x)',
      /reads 'scale', a variable that is reassigned in the function that declares it, but is called from another function or method[\s\S]*Copy it into a const/],
    ['a loop bound the body changes', () => new MovingBound(), [x(), 3], 'for (let i = 0; i < end; i += 2)', 'end',
      /the bound of this loop reads 'end', which the loop body assigns[\s\S]*evaluates it once/],
    ['a loop stepping away from its bound', () => new WrongWay(), [x(), 3], 'i -= 2) x', 'i -= 2',
      /this loop steps down by 2 but tests 'i < \.\.\.', so it either never runs or never ends/],
    ['a loop stepping by 0', () => new ZeroStep(), [x(), 3], 'i += 0', 'i += 0', /this loop steps by 0, so it never ends \(or never starts\)/],
    ['a library function passed directly to .map()', () => new MapLibrary(), [x()], '.map(F.relu)', '[x, x.neg()]',
      /\.map\(\) needs a function[\s\S]*got 'F\.relu'; write an arrow function such as \.map\(\(t\) => F\.relu\(t\)\)/],
    ['reduce of an empty array without a seed', () => new EmptyReduce(), [x()], 'none.reduce(', 'none.reduce',
      /\.reduce\(\) of an empty array with no initial value throws in JavaScript; pass an initial value/],
    ['a doubling loop up to a run-time bound', () => new DoublingToN(), [x(), 5], 's < n', 's < n',
      /the condition of this loop depends on a run-time value[\s\S]*i \+= k/],
    ['a closure updating a variable of forward, called from another method', () => new EscapingUpdate(), [x()], 'fn(t)', 'fn(t)',
      /the arrow function \(declared at [^)]*\) assigns 'total', a variable outside it, but is called from another function or method/],
  ];
  it.each(cases)('%s', (_, make, args, lineText, token, message) => {
    const m = make();
    const e = scriptError(m, ...args);
    expect(e.file).toBe(FILE);
    expect(e.line).toBe(lineOf(m.constructor.name, lineText));
    expect(e.message).toMatch(message);
    expect(e.message.startsWith(`${FILE}:${e.line}:${e.col}: `)).toBe(true);
    caretUnder(e, token);
  });
});
