// Builds the playground into dist/: the two pages' scripts bundled with esbuild for the browser
// (playground.js carries the compiler — ts-morph, TypeScript — digits.js only @kiln/runtime),
// the HTML, CSS and digits.tsgraph copied from public/. Node built-ins that the bundled
// packages import but never call in a page (TypeScript's `sys`, ts-morph's real file system,
// kiln's ONNX file helpers) resolve to shims that throw if called. Invariant: dist/ holds every file
// the pages load; nothing is fetched from elsewhere.
//
//   node examples/playground/build.mjs [--no-minify]     (npm run playground builds, then serves)

import { build } from 'esbuild';
import { cpSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = fileURLToPath(new URL('.', import.meta.url));
export const DIST = join(HERE, 'dist');

/**
 * The editor's example models, in menu order: the CLI's two model files (one copy of each model
 * in the repository) and the playground's own. Each is `[menu name, path from this folder]`.
 */
export const EXAMPLES = [
  ['ResearchModel (seed CNN)', '../cli/research-model.ts'],
  ['AdaptiveResNet (if / while)', '../cli/adaptive-resnet.ts'],
  ['LSTM tagger', 'models/lstm-tagger.ts'],
  ['Transformer block', 'models/transformer-block.ts'],
];

/** The source of the example whose file name is `file` (e.g. 'adaptive-resnet.ts'). */
export function exampleSource(file) {
  const hit = EXAMPLES.find(([, path]) => basename(path) === file);
  if (!hit) throw new Error(`no playground example ${file}`);
  return readFileSync(join(HERE, hit[1]), 'utf8');
}

/** The example model files, as the module 'playground:examples'. */
function examplesPlugin() {
  return {
    name: 'playground-examples',
    setup(b) {
      b.onResolve({ filter: /^playground:examples$/ }, () => ({ path: 'examples', namespace: 'playground' }));
      b.onLoad({ filter: /.*/, namespace: 'playground' }, () => {
        const list = EXAMPLES.map(([name, path]) => ({ name, file: basename(path), source: readFileSync(join(HERE, path), 'utf8') }));
        return { contents: `export default ${JSON.stringify(list)};`, loader: 'js', watchFiles: EXAMPLES.map(([, path]) => join(HERE, path)) };
      });
    },
  };
}

/**
 * Node built-ins (bare or node:) → a module with the same export names whose functions throw
 * when called: the bundled packages import them, a page never calls them (a call would be a bug,
 * and says which function it was).
 */
function nodeBuiltinShims() {
  const names = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
  return {
    name: 'node-builtin-shims',
    setup(b) {
      b.onResolve({ filter: /^(node:)?[a-z_/]+$/ }, (args) => (names.has(args.path) ? { path: args.path.replace(/^node:/, ''), namespace: 'node-shim' } : undefined));
      b.onLoad({ filter: /.*/, namespace: 'node-shim' }, async (args) => {
        const real = await import(/* @vite-ignore */ `node:${args.path}`);
        const keys = Object.keys(real).filter((k) => k !== 'default' && /^[A-Za-z_$][\w$]*$/.test(k));
        const contents = `const missing = (name) => () => { throw new Error(\`\${name} is Node's (node:${args.path}); the playground page cannot call it\`); };\n` +
          keys.map((k) => `export const ${k} = missing('${k}');`).join('\n') + `\nexport default { ${keys.join(', ')} };\n`;
        return { contents, loader: 'js' };
      });
    },
  };
}

/**
 * Builds dist/; resolves with each bundle's size in bytes.
 * @param {{ minify?: boolean, outdir?: string }} [opts]
 */
export async function buildPlayground(opts = {}) {
  const outdir = opts.outdir ?? DIST;
  mkdirSync(outdir, { recursive: true });
  const r = await build({
    entryPoints: { playground: join(HERE, 'src/main.ts'), digits: join(HERE, 'src/digits.ts') },
    outdir, bundle: true, platform: 'browser', format: 'esm', target: 'es2022', minify: opts.minify ?? true,
    logLevel: 'silent', metafile: true, absWorkingDir: HERE, legalComments: 'none',
    conditions: ['browser'], define: { 'process.env.NODE_ENV': '"production"' },
    plugins: [examplesPlugin(), nodeBuiltinShims()],
  });
  for (const f of readdirSync(join(HERE, 'public'))) cpSync(join(HERE, 'public', f), join(outdir, f));
  const sizes = {};
  for (const out of Object.keys(r.metafile.outputs)) sizes[basename(out)] = statSync(join(HERE, out)).size;
  return sizes;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const sizes = await buildPlayground({ minify: !process.argv.includes('--no-minify') });
  for (const [f, n] of Object.entries(sizes)) process.stdout.write(`dist/${f}  ${(n / 1024).toFixed(0)} KiB\n`);
}
