// `kiln inspect <file.tsgraph>`: what a .tsgraph holds — format version, producer, metadata,
// signature, the IR text, the tensor table, kernels, sizes. Invariant: read-only; the file is
// checked by the decoder first, so everything printed comes from a valid file.

import { printGraph, type Graph } from '@kiln/ir-spec';
import { DEFAULT_MAX_STORAGE_BUFFERS, isKernelRecord, kernelStorageBuffers, nodeBindingProblem, nodesWithoutKernels } from '@kiln/runtime';
import { flagBool, type FlagSpec, type Parsed } from '../args.js';
import { UsageError } from '../errors.js';
import { readGraphFile } from '../read-graph.js';
import { countNodes } from './compile.js';

export const INSPECT_FLAGS: Record<string, FlagSpec> = {
  'no-ir': { type: 'boolean' },
  json: { type: 'boolean' },
  verbose: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

export const INSPECT_HELP = `Usage: kiln inspect <file.tsgraph> [options]

Prints a .tsgraph's format version, producer, metadata, inputs and outputs with their types,
the IR text, the tensor table (name, dtype, shape, bytes), the kernels and the total sizes.

Options:
  --no-ir                   leave out the IR text
  --json                    print the file's JSON header instead
  --verbose                 show stack traces on errors
  -h, --help                this help

Example:
  kiln inspect model.tsgraph`;

const DTYPE_BYTES = { float32: 4, float16: 2, bfloat16: 2, int32: 4, bool: 1, int8: 1 } as const;

/** A byte count for people: 1234 → "1.2 KiB". */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(2)} MiB`;
}

/** Runs `kiln inspect`; returns the exit code. */
export async function inspectCommand(p: Parsed): Promise<number> {
  if (p.positionals.length !== 1) throw new UsageError(p.positionals.length ? `expected one .tsgraph file, got ${p.positionals.length}` : 'missing the .tsgraph file', 'inspect');
  const f = readGraphFile(p.positionals[0]);
  const h = f.header;
  if (flagBool(p, 'json')) {
    console.log(JSON.stringify(h, null, 2));
    return 0;
  }
  const lines: string[] = [];
  lines.push(`${f.path}`);
  lines.push(`  format     ${h.format.major}.${h.format.minor}`);
  // readGraphFile decoded the file with the checksum verified, so a present one matched.
  lines.push(`  checksum   ${h.checksum ? `${h.checksum.algorithm} ${h.checksum.blob} (verified)` : `none (a format ${h.format.major}.${h.format.minor} file, written before checksums; re-save it to add one)`}`);
  lines.push(`  producer   ${Object.entries(h.producer).map(([k, v]) => `${k} ${String(v)}`).join(', ')}`);
  const meta = Object.entries(h.metadata);
  lines.push(`  metadata   ${meta.length ? meta.map(([k, v]) => `${k}=${v.length > 60 ? `${v.slice(0, 57)}...` : v}`).join(', ') : '(none)'}`);
  lines.push(`  graph      @${f.graph.name}: ${countNodes(f.graph.body.nodes)} nodes`);
  lines.push(`  backends   ${backendsText(f.graph, h.kernels)}`);
  lines.push('', 'Inputs:');
  for (const i of h.inputs) lines.push(`  ${i.name}: ${i.type}`);
  lines.push('', 'Outputs:');
  for (const o of h.outputs) lines.push(`  ${o.name}: ${o.type}`);
  if (!flagBool(p, 'no-ir')) lines.push('', 'IR:', printGraph(f.graph).replace(/\n$/, ''));

  lines.push('', `Tensors (${h.tensors.length}):`);
  const rows = h.tensors.map((t) => [t.name, t.dtype, `[${t.shape.join(',')}]`, String(t.length)]);
  lines.push(...table(['name', 'dtype', 'shape', 'bytes'], rows).map((l) => `  ${l}`));
  lines.push('', `Kernels (${h.kernels.length}):`);
  if (h.kernels.length === 0) lines.push('  (none stored in the file)');
  const kernelRows = h.kernels.map((k) => [String(k.name ?? ''), String(k.key ?? '?'), dispatchText(k.grid), typeof k.wgsl === 'string' ? String(k.wgsl.length) : '?']);
  if (kernelRows.length) lines.push(...table(['name', 'key', 'dispatch', 'wgsl bytes'], kernelRows).map((l) => `  ${l}`));

  const tensorBytes = h.tensors.reduce((a, t) => a + t.length, 0);
  const elems = h.tensors.reduce((a, t) => a + t.shape.reduce((x, y) => x * y, 1) * DTYPE_BYTES[t.dtype], 0);
  const headerBytes = f.layout.blobOffset;
  lines.push('', 'Sizes:');
  lines.push(`  file       ${formatBytes(f.bytes)} (${f.bytes} bytes)`);
  lines.push(`  header     ${formatBytes(headerBytes)}`);
  lines.push(`  tensors    ${formatBytes(tensorBytes)} in ${h.tensors.length} tensors (${formatBytes(elems)} of elements)`);
  const wgsl = h.kernels.reduce((a, k) => a + (typeof k.wgsl === 'string' ? k.wgsl.length : 0), 0);
  if (h.kernels.length) lines.push(`  kernels    ${formatBytes(wgsl)} of WGSL in ${h.kernels.length} kernels`);
  console.log(lines.join('\n'));
  return 0;
}

/** Where the file runs: WebGPU needs a stored kernel for every node, each within the adapter's
 * storage-buffer limit (WebGPU's default of 8 unless the adapter allows more). */
function backendsText(graph: Graph, kernels: readonly unknown[]): string {
  const missing = nodesWithoutKernels(graph, kernels);
  if (!missing.length) {
    const widest = kernels.filter(isKernelRecord).map((k) => ({ name: k.name, n: kernelStorageBuffers(k) })).sort((a, b) => b.n - a.n)[0];
    if (widest && widest.n > DEFAULT_MAX_STORAGE_BUFFERS) {
      return `cpu, webgpu (only on adapters with maxStorageBuffersPerShaderStage >= ${widest.n}: kernel '${widest.name}' binds ${widest.n} storage buffers, over WebGPU's default of ${DEFAULT_MAX_STORAGE_BUFFERS})`;
    }
    return 'cpu, webgpu';
  }
  const over = missing.map((n) => nodeBindingProblem(n)).find((p) => p !== undefined);
  const why = over ? `; ${over}` : '';
  return `cpu (webgpu: no WGSL for ${missing.length} node${missing.length > 1 ? 's' : ''}: ${[...new Set(missing.map((n) => n.op))].join(', ')}${why})`;
}

/** A kernel record's grid (runtime/src/webgpu/kernel.ts KernelGrid) in words. */
function dispatchText(grid: unknown): string {
  if (!grid || typeof grid !== 'object') return '?';
  const g = grid as { tile?: unknown; per?: unknown; merge?: unknown };
  const tile = Array.isArray(g.tile) && g.tile.length ? `tile [${g.tile.join(',')}]` : 'per element';
  const merge = typeof g.merge === 'number' ? `, dims ${g.merge}.. merged` : '';
  return `${tile}${merge}, ${String(g.per ?? '?')} per workgroup`;
}

/** Left-aligned columns (the last right-aligned when numeric). */
function table(head: string[], rows: string[][]): string[] {
  const all = [head, ...rows];
  const w = head.map((_, j) => Math.max(...all.map((r) => r[j].length)));
  const numeric = (j: number) => rows.length > 0 && rows.every((r) => /^\d+$/.test(r[j]));
  return all.map((r) => r.map((c, j) => (numeric(j) ? c.padStart(w[j]) : c.padEnd(w[j]))).join('  ').trimEnd());
}
