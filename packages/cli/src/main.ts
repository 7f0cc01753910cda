// The `kiln` command: dispatches to compile / run / inspect / viz / bench, prints errors and maps them
// to exit codes. Invariant: exit 0 on success, 1 on a user error (usage, a model file that does
// not compile, a bad .tsgraph), 2 on an internal error; a stack trace only with --verbose.

import { relative } from 'node:path';
import { type FlagSpec, type Parsed, parseArgs } from './args.js';
import { isUserError, UsageError } from './errors.js';
import { BENCH_FLAGS, BENCH_HELP, benchCommand } from './commands/bench.js';
import { COMPILE_FLAGS, COMPILE_HELP, compileCommand } from './commands/compile.js';
import { EXPORT_FLAGS, EXPORT_HELP, exportCommand } from './commands/export.js';
import { INSPECT_FLAGS, INSPECT_HELP, inspectCommand } from './commands/inspect.js';
import { RUN_FLAGS, RUN_HELP, runCommand } from './commands/run.js';
import { VIZ_FLAGS, VIZ_HELP, vizCommand } from './commands/viz.js';

interface Command {
  readonly summary: string;
  readonly flags: Record<string, FlagSpec>;
  readonly help: string;
  readonly run: (p: Parsed) => Promise<number>;
}

const COMMANDS: Record<string, Command> = {
  compile: { summary: 'compile a TypeScript model file to a .tsgraph (script or trace, optimize)', flags: COMPILE_FLAGS, help: COMPILE_HELP, run: compileCommand },
  export: { summary: 'export a TypeScript model file as ONNX (kiln export model.ts --onnx -o model.onnx)', flags: EXPORT_FLAGS, help: EXPORT_HELP, run: exportCommand },
  run: { summary: 'run a .tsgraph on random or given inputs (CPU or WebGPU) and time it', flags: RUN_FLAGS, help: RUN_HELP, run: runCommand },
  inspect: { summary: 'show a .tsgraph: signature, IR, tensors, kernels, sizes', flags: INSPECT_FLAGS, help: INSPECT_HELP, run: inspectCommand },
  viz: { summary: 'draw a .tsgraph (or a model file) as Graphviz DOT or a self-contained HTML page', flags: VIZ_FLAGS, help: VIZ_HELP, run: vizCommand },
  bench: { summary: 'time a model: eager vs -O0 vs -O2, CPU vs WebGPU; median, spread, peak memory', flags: BENCH_FLAGS, help: BENCH_HELP, run: benchCommand },
};

export const MAIN_HELP = `Usage: kiln <command> [options]

Commands:
${Object.entries(COMMANDS).map(([n, c]) => `  ${n.padEnd(10)}${c.summary}`).join('\n')}

Run 'kiln <command> --help' for a command's options.

Example:
  kiln compile model.ts -o model.tsgraph --input x:f32[N,3,32,32]
  kiln run model.tsgraph --batch 4
  kiln inspect model.tsgraph
  kiln viz model.tsgraph --format html -o model.html`;

/**
 * Runs the CLI on `argv` (without `node` and the script path) and returns the exit code.
 * @example
 * ```ts
 * import { main } from '@kiln/cli';
 * process.exitCode = await main(['inspect', 'model.tsgraph']);
 * ```
 */
export async function main(argv: readonly string[]): Promise<number> {
  const verbose = argv.includes('--verbose');
  const [name, ...rest] = argv;
  try {
    if (name === undefined) throw new UsageError('no command given');
    if (name === '--help' || name === '-h' || name === 'help') {
      const topic = name === 'help' ? rest[0] : undefined;
      console.log(topic && Object.hasOwn(COMMANDS, topic) ? COMMANDS[topic].help : MAIN_HELP);
      return 0;
    }
    if (name === '--version' || name === '-v') {
      console.log('kiln 0.1.0');
      return 0;
    }
    // Object.hasOwn: the command name is user text ('constructor' must not find Object's).
    if (!Object.hasOwn(COMMANDS, name)) throw new UsageError(`unknown command '${name}'`);
    const cmd = COMMANDS[name];
    const parsed = parseArgs(name, rest, cmd.flags);
    if (parsed.flags.get('help') === true) {
      console.log(cmd.help);
      return 0;
    }
    return await runGuarded(name, () => cmd.run(parsed));
  } catch (e) {
    return report(e, verbose);
  }
}

/**
 * Runs a command; if the process exits before it finishes (a model file's code called
 * process.exit after its import, e.g. from forward or a timer), that is reported as an error and
 * the exit code becomes 1, never a silent exit with the model's code.
 */
async function runGuarded(name: string, run: () => Promise<number>): Promise<number> {
  const onExit = () => {
    process.stderr.write(`error: the process exited (process.exit in the model's code) before 'kiln ${name}' finished; nothing was written. ` +
      "Remove the process.exit call from the model's code\n");
    process.exitCode = 1;
  };
  process.on('exit', onExit);
  try {
    return await run();
  } finally {
    process.off('exit', onExit);
  }
}

function report(e: unknown, verbose: boolean): number {
  const user = isUserError(e);
  const message = e instanceof Error ? e.message : String(e);
  if (e instanceof UsageError) {
    process.stderr.write(`kiln: ${message}\n\n${e.command && Object.hasOwn(COMMANDS, e.command) ? COMMANDS[e.command].help : MAIN_HELP}\n`);
    return 1;
  }
  process.stderr.write(user ? `error: ${located(e) ?? message}\n` : `internal error: ${message}\nThis is a bug in Kiln; please report it with the command you ran${verbose ? '' : ' and the output of --verbose'}.\n`);
  if (verbose && e instanceof Error) {
    process.stderr.write(`${e.stack ?? ''}\n`);
    if (e.cause instanceof Error && e.cause.stack) process.stderr.write(`caused by: ${e.cause.stack}\n`);
  }
  return user ? 1 : 2;
}

/** A ScriptError's message with its file relative to the working directory. */
function located(e: unknown): string | undefined {
  if (!(e instanceof Error) || e.name !== 'ScriptError') return undefined;
  const { file, line, col, reason, frame, notes } = e as Error & { file?: unknown; line?: unknown; col?: unknown; reason?: unknown; frame?: unknown; notes?: unknown };
  if (typeof file !== 'string' || typeof reason !== 'string' || typeof frame !== 'string') return undefined;
  const inner = Array.isArray(notes) ? notes.map((n) => `\n${String(n)}`).join('') : '';
  return `${relative(process.cwd(), file) || file}:${String(line)}:${String(col)}: ${reason}\n${frame}${inner}`;
}
