// Eager memory accounting (torch.cuda.memory_stats' role, for host tensors). Invariant: while
// tracking, a storage's bytes count as live from the first Tensor made on it until the garbage
// collector reclaims it (a FinalizationRegistry callback), so views share one count and `liveBytes`
// is what the process holds in tensor data made since tracking began; `peakBytes` is the most it
// held since the last reset. Tracking costs a registry entry per storage (a quarter of the digits
// training time), so it starts at the first call of stats(), resetPeakStats() or a memory
// profiler, not before: storages made earlier are not counted.
// Reclaiming is the collector's choice: run Node with --expose-gc and call gc() to settle counts.
// 'webgpu' tensors are counted by the WebGPU device's caching allocator instead (device.ts).

import type { Storage } from './tensor.js';
import { checkDeviceName, gpuEmptyCache, gpuMemoryStats, gpuResetPeak, type DeviceName, type GpuMemoryStats } from './device.js';

export type { GpuMemoryStats } from './device.js';

/** Eager tensor memory, in bytes of tensor data. */
export interface MemoryStats {
  /** Bytes of tensor storages alive now (not yet reclaimed). */
  readonly liveBytes: number;
  /** The most bytes alive at once since the process started or resetPeakStats(). */
  readonly peakBytes: number;
  /** Bytes of every storage created (a running total). */
  readonly allocatedBytes: number;
  /** Bytes of storages reclaimed so far. */
  readonly freedBytes: number;
  /** Storages created / reclaimed. */
  readonly allocations: number;
  readonly frees: number;
}

let tracking = false;
const counts = { live: 0, peak: 0, allocated: 0, freed: 0, allocations: 0, frees: 0 };
const seen = new WeakSet<Storage>();
type FreeListener = (bytes: number) => void;
const freeListeners: FreeListener[] = [];
const reclaimed = new FinalizationRegistry<number>((bytes) => {
  counts.live -= bytes;
  counts.freed += bytes;
  counts.frees++;
  for (const l of freeListeners) l(bytes);
});

/** @internal counts a storage the first time a Tensor is made on it; returns its bytes when new, else 0. */
export function noteStorage(s: Storage): number {
  if (!tracking || seen.has(s) || 'gpu' in s) return 0;
  seen.add(s);
  const bytes = s.data.byteLength;
  counts.live += bytes;
  counts.allocated += bytes;
  counts.allocations++;
  if (counts.live > counts.peak) counts.peak = counts.live;
  reclaimed.register(s, bytes);
  return bytes;
}

/** @internal calls `l` with the bytes of each reclaimed storage until the returned function is called. */
export function onStorageFreed(l: FreeListener): () => void {
  tracking = true;
  freeListeners.push(l);
  return () => { freeListeners.splice(freeListeners.indexOf(l), 1); };
}

/**
 * Live and peak bytes of eager tensor data on the CPU (the default), or the WebGPU caching
 * allocator's figures: allocated to live tensors, reserved (live + cached), peak, buffers created
 * and the queue's counters (torch.cuda.memory_stats).
 * @example
 * memory.resetPeakStats(); model.forward(x); console.log(memory.stats().peakBytes);
 * memory.stats('webgpu').reserved;
 */
export function stats(device?: 'cpu'): MemoryStats;
export function stats(device: 'webgpu'): GpuMemoryStats;
export function stats(device: DeviceName = 'cpu'): MemoryStats | GpuMemoryStats {
  checkDeviceName(device, 'memory.stats');
  if (device === 'webgpu') return gpuMemoryStats();
  tracking = true;
  return { liveBytes: counts.live, peakBytes: counts.peak, allocatedBytes: counts.allocated, freedBytes: counts.freed, allocations: counts.allocations, frees: counts.frees };
}

/** Starts peak tracking over from the bytes alive now, on `device` or (no argument) on every device. */
export function resetPeakStats(device?: DeviceName): void {
  if (device !== undefined) checkDeviceName(device, 'memory.resetPeakStats');
  if (device !== 'webgpu') { tracking = true; counts.peak = counts.live; }
  if (device !== 'cpu') gpuResetPeak();
}

/** Destroys the WebGPU buffers the caching allocator holds that no tensor uses (torch.cuda.empty_cache). */
export function emptyCache(): void { gpuEmptyCache(); }
