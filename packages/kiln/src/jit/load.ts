// jit.load: a saved .tsgraph as a module whose run() takes and returns core Tensors.

import { load as loadModel, type InputValue, type LoadOptions, type Model } from '@kiln/runtime';
import type { Tensor } from '@kiln/core';
import type { Graph } from '@kiln/ir-spec';
import { toTensor } from './tensors.js';

/** An input: a Tensor, a plain `{ data, shape, dtype }`, or a number/boolean for scalar inputs. */
export type GraphInput = InputValue;

export class LoadedModule {
  constructor(readonly model: Model) {}
  get graph(): Graph { return this.model.graph; }
  get inputs() { return this.model.inputs; }
  get outputs() { return this.model.outputs; }
  /** Runs the graph; one Tensor per graph output. */
  async run(inputs: readonly GraphInput[]): Promise<Tensor[]> {
    return (await this.model.run(inputs)).map(toTensor);
  }
  /** Reseeds the generator the graph's random ops draw from (seeded by `load(src, { seed })`). */
  manualSeed(seed: number): void { this.model.manualSeed(seed); }
  /** Synchronous run (CPU backend only). */
  forward(...inputs: GraphInput[]): Tensor[] {
    return this.model.runSync(inputs).map(toTensor);
  }
}

/**
 * Loads a `.tsgraph` file (path, URL or bytes) for running. A graph with random ops (rand,
 * randn, training-mode dropout) draws from the module's own generator: `{ seed }` makes its
 * runs reproducible (`manualSeed(s)` reseeds later).
 * @example const g = await jit.load('model.tsgraph', { backend: 'cpu', seed: 0 }); const [y] = await g.run([x]);
 */
export async function load(source: Uint8Array | ArrayBuffer | string, opts: LoadOptions = {}): Promise<LoadedModule> {
  return new LoadedModule(await loadModel(source, opts));
}
