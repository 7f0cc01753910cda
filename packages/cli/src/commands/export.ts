// `kiln export <model.ts> --onnx -o model.onnx`: load the model file, script (or trace) and
// optimize it as `kiln compile` does, then write the graph as an ONNX model (jit.exportOnnx).
// Invariant: the ONNX file computes what the .tsgraph `kiln compile` would write computes;
// symbolic dims of --input become the ONNX inputs' dim_params.

import { jit } from 'kiln';
import { flagBool, flagString, type FlagSpec, type Parsed } from '../args.js';
import { UsageError, UserError } from '../errors.js';
import { COMPILE_FLAGS, compileModelFile } from './compile.js';
import { Progress } from '../progress.js';

export const EXPORT_FLAGS: Record<string, FlagSpec> = {
  ...COMPILE_FLAGS,
  onnx: { type: 'boolean' },
  opset: { type: 'string' },
};

export const EXPORT_HELP = `Usage: kiln export <model.ts> --onnx -o <model.onnx> [options]

Exports a TypeScript model file as an ONNX model (for ONNX Runtime, Triton Inference Server, ...).
The model is loaded, scripted (or traced with --trace) and optimized as by 'kiln compile'; the
graph is then written in ONNX: symbolic dims of --input (N in x:f32[N,3,32,32]) become
dim_params, if/loop become ONNX If/Loop, fused ops are written as their decomposition.

Options:
  --onnx                    write ONNX (the only export format; required)
  -o, --output <file>       where to write the .onnx file (required)
  --opset <n>               the ONNX opset, 13 to 17 (default 17)
  --export, --trace, --input, --weights, -O0|-O1|-O2, --check, -q, --verbose: as for 'kiln compile'
  -h, --help                this help

Example:
  kiln export model.ts --onnx -o model.onnx --input x:f32[N,3,32,32]`;

/** Runs `kiln export`; returns the exit code. */
export async function exportCommand(p: Parsed): Promise<number> {
  if (!flagBool(p, 'onnx')) throw new UsageError('name the format: --onnx (the only export format)', 'export');
  if (p.positionals.length !== 1) throw new UsageError(p.positionals.length ? `expected one model file, got ${p.positionals.length}: ${p.positionals.join(' ')}` : 'missing the model file', 'export');
  const out = flagString(p, 'output');
  if (!out) throw new UsageError('missing -o <model.onnx>', 'export');
  const opsetText = flagString(p, 'opset');
  const opsetVersion = opsetText === undefined ? 17 : Number(opsetText);
  if (!Number.isInteger(opsetVersion) || opsetVersion < 13 || opsetVersion > 17) throw new UsageError(`--opset must be 13 to 17, got ${opsetText}`, 'export');
  const progress = new Progress(flagBool(p, 'quiet'));
  const optimized = await compileModelFile(p.positionals[0], p, progress, 'export');
  const bytes = await progress.stage('write', out, () => {
    try {
      return jit.exportOnnx(optimized, out, { opsetVersion });
    } catch (e) {
      if (e instanceof jit.OnnxExportError) throw new UserError(e.message, { cause: e });
      throw e;
    }
  });
  if (!flagBool(p, 'quiet')) process.stderr.write(`wrote ${out}: ONNX opset ${opsetVersion}, ${bytes.length} bytes\n`);
  return 0;
}
