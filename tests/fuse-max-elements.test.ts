// fuse-elementwise's `maxElements` (PassOptions.fuseMaxElements; jit.compile's training graphs on
// the CPU fuse chains of at most 1024 elements): a chain whose result is small fuses into one
// node, a large one and one of symbolic size stay as they are, and the fused graph computes what
// the unfused one does.
import { describe, expect, it } from 'vitest';
import { GraphBuilder, tensorType, walkNodes, type Graph, type Dim } from '@kiln/ir-spec';
import { createModel } from '@kiln/runtime';
import { runPass } from '../compiler/src/pipeline.js';

/** running = running·0.9 + stat·0.1 on [C], and the same chain on [N, C]. */
function graph(small: Dim[], large: Dim[]): Graph {
  const b = new GraphBuilder('chains');
  const chain = (shape: Dim[], name: string) => {
    const r = b.input(`${name}_running`, tensorType('float32', shape)), s = b.input(`${name}_stat`, tensorType('float32', shape));
    const k9 = b.op1('constant', [], { dtype: 'float32', value: 0.9 }), k1 = b.op1('constant', [], { dtype: 'float32', value: 0.1 });
    b.output(name, b.op1('add', [b.op1('mul', [r, k9]), b.op1('mul', [s, k1])]));
  };
  chain(small, 'small');
  chain(large, 'large');
  return b.build();
}

const fusedCount = (g: Graph) => [...walkNodes(g.body)].filter((n) => n.op === 'fused_elementwise').length;
const opCount = (g: Graph, op: string) => g.body.nodes.filter((n) => n.op === op).length;

describe('fuse-elementwise: maxElements', () => {
  it('fuses the small chain only; the results equal the unfused graph\'s', () => {
    const g = graph([16], [64, 32]);
    const fused = runPass('fuse-elementwise', g, { fuseMaxElements: 1024 });
    expect(fusedCount(fused)).toBe(1);
    expect(opCount(fused, 'mul')).toBe(2); // the large chain's two muls and its add are left alone
    expect(opCount(fused, 'add')).toBe(1);
    expect(fusedCount(runPass('fuse-elementwise', g))).toBe(2); // without the option both fuse
    const inputs = [16, 16, 64 * 32, 64 * 32].map((n, k) => Float32Array.from({ length: n }, (_, i) => Math.sin(i + k)));
    const shapes = [[16], [16], [64, 32], [64, 32]];
    const run = (x: Graph) => createModel(x).runSync(inputs.map((data, k) => ({ data, shape: shapes[k], dtype: 'float32' as const })));
    const [a, b] = [run(g), run(fused)];
    for (let k = 0; k < a.length; k++) {
      const d = Array.from(a[k].data, (v, i) => Math.abs(v - b[k].data[i]));
      expect(Math.max(...d)).toBeLessThan(1e-6);
    }
  });

  it('leaves a chain of symbolic size alone', () => {
    const fused = runPass('fuse-elementwise', graph(['C'], ['N', 32]), { fuseMaxElements: 1024 });
    expect(fusedCount(fused)).toBe(0);
  });
});
