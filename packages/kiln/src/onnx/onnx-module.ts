// jit.loadOnnx: an imported ONNX model as a Kiln module: `graph` (the Kiln IR of import.ts),
// forward on the CPU executor, save to .tsgraph; jit.optimizeForInference, jit.generateWgsl and
// jit.exportOnnx take it as they take a traced module.

import { writeFile } from 'node:fs/promises';
import type { Tensor } from '@kiln/core';
import type { Graph } from '@kiln/ir-spec';
import { createModel, type InputValue, type Model } from '@kiln/runtime';
import { toTensor } from '../jit/tensors.js';
import { graphBytes, type SaveOptions } from '../jit/producer.js';
import { onnxToGraph } from './import.js';

export class OnnxModule {
  private readonly model: Model;
  constructor(readonly graph: Graph) {
    this.model = createModel(graph);
  }
  /** Runs the graph: one argument per ONNX graph input; one Tensor, or an array for several outputs. */
  forward(...inputs: InputValue[]): any {
    const outs = this.model.runSync(inputs).map(toTensor);
    return outs.length === 1 ? outs[0] : outs;
  }
  /** Writes the graph as a .tsgraph file. */
  async save(path: string, opts: SaveOptions = {}): Promise<void> {
    await writeFile(path, graphBytes(this.graph, opts));
  }
}

/**
 * Imports an ONNX model (bytes or a .onnx path), as PyTorch's torch.onnx.export writes it
 * (opsets 13–17): initializers become named parameters, dim_params symbolic dims.
 * @example
 * const m = jit.loadOnnx('resnet.onnx');
 * const y = m.forward(randn([4, 3, 32, 32]));
 * await jit.optimizeForInference(m).save('resnet.tsgraph');
 */
export function loadOnnx(source: Uint8Array | string): OnnxModule {
  return new OnnxModule(onnxToGraph(source));
}
