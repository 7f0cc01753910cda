// Loading a model file: esbuild bundles the .ts (its relative imports included) into a temporary
// .mjs whose 'kiln' import points at the very copy of 'kiln' this CLI uses, then imports it and
// picks the model. Invariant: the user's nn.Module and Tensor classes are the CLI's own (one
// copy of 'kiln'), so jit.script/jit.trace accept them; a syntax error is reported at
// file:line:col with the offending line and never as a stack trace; a file that calls
// process.exit while it is imported is an error (exit 1), never a silent exit.

import { build, type Message } from 'esbuild';
import { mkdtempSync, rmSync, existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { nn } from 'kiln';
import { UserError } from './errors.js';
import { loaderFor, parenthesizeReservedDecorators } from './decorator-names.js';

export interface LoadedFile {
  /** The absolute path of the model file. */
  readonly file: string;
  /** The module's exports. */
  readonly exports: Record<string, unknown>;
}

function formatMessage(m: Message): string {
  const loc = m.location;
  if (!loc) return m.text;
  const frame = `${String(loc.line).padStart(5)} | ${loc.lineText}\n${' '.repeat(8 + loc.column)}^`;
  return `${loc.file}:${loc.line}:${loc.column + 1}: ${m.text}\n${frame}`;
}

/** Transpiles and imports `path`; throws a UserError at file:line:col on a syntax or import error. */
export async function importModelFile(path: string): Promise<LoadedFile> {
  const file = resolve(path);
  if (!existsSync(file)) throw new UserError(`no such file: ${path}`);
  const kilnUrl = import.meta.resolve('kiln');
  const dir = mkdtempSync(join(tmpdir(), 'kiln-cli-'));
  const out = join(dir, 'model.mjs');
  try {
    try {
      await build({
        entryPoints: [file],
        outfile: out,
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        keepNames: true,
        // Stack-based locations (trace warnings, errors in the model) then name the .ts file.
        sourcemap: 'inline',
        sourcesContent: false,
        logLevel: 'silent',
        absWorkingDir: process.cwd(),
        plugins: [{
          name: 'kiln-external',
          setup(b) {
            // Every import of 'kiln' resolves to the CLI's own copy.
            // Other packages are bundled from the model file's folder (node builtins stay external).
            b.onResolve({ filter: /^kiln$/ }, () => ({ path: kilnUrl, external: true }));
            // `@jit.export` (a reserved word after the dot) is read as `@(jit.export)` (decorator-names.ts).
            b.onLoad({ filter: /\.[cm]?[jt]sx?$/ }, async (args) => {
              if (args.path.includes('/node_modules/')) return undefined;
              const text = readFileSync(args.path, 'utf8');
              const loader = loaderFor(args.path);
              const fixed = await parenthesizeReservedDecorators(text, loader);
              return fixed === text ? undefined : { contents: fixed, loader };
            });
          },
        }],
      });
    } catch (e) {
      const errors = (e as { errors?: Message[] }).errors;
      if (errors?.length) {
        for (const m of errors) if (m.location) m.location.file = relative(process.cwd(), resolve(m.location.file)) || m.location.file;
        throw new UserError(errors.map(formatMessage).join('\n'));
      }
      throw e;
    }
    process.setSourceMapsEnabled(true);
    let exports: Record<string, unknown>;
    // Importing runs the file's top-level code; a process.exit there would end kiln silently
    // (with the file's exit code): it throws instead, and the import fails with a located error.
    const exit = process.exit;
    process.exit = ((code?: number | string | null) => { throw new ModelExit(code); }) as typeof process.exit;
    try {
      exports = await import(pathToFileURL(out).href) as Record<string, unknown>;
    } catch (e) {
      const where = locateIn(e, file) ?? relative(process.cwd(), file);
      if (e instanceof ModelExit) {
        throw new UserError(`${where}: the model file exited during import (it called process.exit(${e.code === undefined ? '' : String(e.code)})). ` +
          'kiln imports the model file to get the model, so its top-level code runs; remove the process.exit call, or keep the ' +
          "file's script code out of it (in another file, or under a check that the file is the main module)", { cause: e });
      }
      // The model file ran and threw: its own error, located through the inline source map.
      throw new UserError(`${where}: the model file throws when imported: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
    } finally {
      process.exit = exit;
    }
    return { file, exports };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Thrown by process.exit while the model file is imported. */
class ModelExit extends Error {
  constructor(readonly code: number | string | null | undefined) {
    super(`process.exit(${code ?? ''}) called while importing the model file`);
    this.name = 'ModelExit';
  }
}

/** `file:line:col` (relative) of the innermost stack frame of `e` inside `file`, if any. */
function locateIn(e: unknown, file: string): string | undefined {
  const stack = e instanceof Error ? e.stack ?? '' : '';
  for (const line of stack.split('\n')) {
    const m = /\(?(?:file:\/\/)?([^\s()]+):(\d+):(\d+)\)?\s*$/.exec(line.trim());
    if (m && resolve(m[1]) === file) return `${relative(process.cwd(), file)}:${m[2]}:${m[3]}`;
  }
  return undefined;
}

/** A model instance, made from the default export or from `exportName` (an instance, class or factory). */
export function pickModel(loaded: LoadedFile, exportName: string | undefined): nn.Module {
  const name = exportName ?? 'default';
  const shown = relative(process.cwd(), loaded.file);
  const available = Object.keys(loaded.exports).filter((k) => k !== 'inputs');
  if (!Object.hasOwn(loaded.exports, name)) {
    const hint = exportName ? `the file exports: ${available.join(', ') || 'nothing'}` : `export the model as default (export default new MyModel()) or pass --export NAME (the file exports: ${available.join(', ') || 'nothing'})`;
    throw new UserError(`${shown}: no export '${name}'; ${hint}`);
  }
  const v = loaded.exports[name];
  if (v instanceof nn.Module) return v;
  if (typeof v === 'function') {
    const isClass = /^class[\s{]/.test(Function.prototype.toString.call(v));
    let made: unknown;
    try {
      made = isClass ? new (v as new () => unknown)() : (v as () => unknown)();
    } catch (e) {
      throw new UserError(`${shown}: constructing the model from export '${name}' throws: ${e instanceof Error ? e.message : String(e)}; the ${isClass ? 'class must construct with no arguments' : 'factory must take no arguments'}`, { cause: e });
    }
    if (made instanceof nn.Module) return made;
    throw new UserError(`${shown}: export '${name}' ${isClass ? 'constructs' : 'returns'} ${describe(made)}, not an nn.Module`);
  }
  throw new UserError(`${shown}: export '${name}' is ${describe(v)}; export an nn.Module instance, class or factory`);
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v === 'object') return `an object (${(v as object).constructor?.name ?? 'Object'})`;
  return `a ${typeof v}`;
}
