// jit.compile training hands the forward graph's saved activations back to its runtime model once
// the backward graph has read them (the engine releases the node), so the next step computes its
// saved values into the same arrays instead of fresh ones (on the CPU with WebAssembly over a
// shared memory, arrays of the kernel memory swapped in for the first ones handed back). What must hold: the arrays are reused
// only after a backward released them — not while a graph that was not yet differentiated (or one
// kept with retainGraph) still holds them — and gradients stay eager's through all of it.
import { describe, expect, it } from 'vitest';
import { F, jit, manualSeed, nn, randn, type Tensor } from 'kiln';

function model() {
  manualSeed(3);
  return new nn.Sequential(new nn.Conv2d(2, 8, 3, { padding: 1 }), new nn.BatchNorm2d(8), new nn.ReLU(), new nn.Flatten(), new nn.Linear(8 * 16 * 16, 4)).train();
}

/** The arrays of the large activations the compiled node behind `out` saved (not its inputs: `own`). */
const savedArrays = (out: Tensor, own: readonly Tensor[]) => {
  const inputs = new Set(own.map((t) => t.data.buffer));
  return new Set(out.gradFn!.savedTensors().filter((t) => t.numel() >= 1024 && !inputs.has(t.data.buffer)).map((t) => t.data));
};

describe('jit.compile: saved activations recycled', () => {
  it('reuses the arrays of a released step, never those of a graph still alive; gradients equal eager\'s', () => {
    const m = model(), e = model();
    const net = jit.compile(m);
    const x = randn([4, 2, 16, 16]), y = randn([4, 4]);
    const own = [x, ...m.parameters()];
    const grads = (mod: nn.Module) => mod.parameters().map((p) => Array.from(p.grad!.data));

    const o1 = net.forward(x), a1 = savedArrays(o1, own);
    expect(a1.size).toBeGreaterThan(0);
    const o2 = net.forward(x); // o1's graph is alive (no backward yet): nothing to reuse
    for (const b of savedArrays(o2, own)) expect(a1.has(b)).toBe(false);
    F.mseLoss(o1, y).backward({ retainGraph: true }); // kept: still not released
    const o3 = net.forward(x);
    for (const b of savedArrays(o3, own)) expect(a1.has(b)).toBe(false);
    F.mseLoss(o1, y).backward(); // released now: its arrays go back, swapped for kernel-memory ones
    const o4 = net.forward(x), a4 = savedArrays(o4, own);
    expect([...a4].some((b) => b.buffer instanceof SharedArrayBuffer)).toBe(true);
    for (const b of a4) expect(a1.has(b)).toBe(false);

    // The same calls eagerly: o1's loss twice, o2..o4 never differentiated.
    const eo1 = e.forward(x);
    e.forward(x); e.forward(x); e.forward(x);
    F.mseLoss(eo1, y).backward({ retainGraph: true });
    F.mseLoss(eo1, y).backward();
    const [g, ge] = [grads(m), grads(e)];
    for (let k = 0; k < g.length; k++) for (let i = 0; i < g[k].length; i++) expect(Math.abs(g[k][i] - ge[k][i])).toBeLessThan(1e-4);
    // o4's graph still differentiates correctly on its recycled arrays.
    m.zeroGrad(); e.zeroGrad();
    F.mseLoss(o4, y).backward();
    F.mseLoss(e.forward(x), y).backward();
    const [h, he] = [grads(m), grads(e)];
    for (let k = 0; k < h.length; k++) for (let i = 0; i < h[k].length; i++) expect(Math.abs(h[k][i] - he[k][i])).toBeLessThan(1e-4);
    // Released, o4's arrays serve the next step as they are.
    expect([...savedArrays(net.forward(x), own)].some((b) => a4.has(b))).toBe(true);
  });
});
