// Sequential.slice keeps the original keys (PyTorch's `seq[1:]` keeps its OrderedDict keys), so a
// slice's state dict loads PyTorch's keys and the parameters of a scripted or traced slice are
// named as in the full model. Forward, iteration, length, indexing and nested slices all work.
import { describe, it, expect } from 'vitest';
import { jit, manualSeed, randn, noGrad, nn, type Tensor } from 'kiln';

function model(): nn.Sequential {
  return new nn.Sequential(new nn.Dropout(0.5), new nn.Linear(6, 5), new nn.ReLU(), new nn.Linear(5, 3));
}

function close(got: Tensor, want: Tensor): void {
  expect(got.shape).toEqual(want.shape);
  const a = got.toArray(), b = want.toArray();
  for (let i = 0; i < b.length; i++) expect(Math.abs(a[i] - b[i])).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(b[i])));
}

describe('Sequential.slice keeps the original keys', () => {
  it('state dict keys, length, indexing, iteration and forward of classifier.slice(1)', () => {
    manualSeed(0);
    const full = model();
    full.eval();
    const tail = full.slice(1);
    expect(Object.keys(tail.stateDict())).toEqual(['1.weight', '1.bias', '3.weight', '3.bias']);
    expect(tail.length).toBe(3);
    expect(tail.get(0)).toBe(full.get(1));
    expect(tail.get(-1)).toBe(full.get(3));
    expect([...tail]).toEqual([full.get(1), full.get(2), full.get(3)]);
    expect(tail.namedMembers().map(([k]) => k)).toEqual(['1', '2', '3']);
    const x = randn([2, 6]);
    close(tail.forward(x) as Tensor, noGrad(() => full.forward(x)) as Tensor);
    expect(tail.toString()).toContain('(1): Linear(in_features=6, out_features=5, bias=True)');
  });

  it('a PyTorch-style state dict (the full model keys under a prefix) loads into a slice by key', () => {
    manualSeed(1);
    class Net extends nn.Module {
      classifier = model().slice(1);
      forward(x: Tensor): Tensor { return this.classifier.forward(x) as Tensor; }
    }
    const src = new nn.Sequential({ classifier: model() });
    const sd = Object.fromEntries(Object.entries(src.stateDict()).map(([k, v]) => [k, v]));
    expect(Object.keys(sd)).toContain('classifier.1.weight');
    const net = new Net();
    expect(net.loadStateDict(sd)).toEqual({ missingKeys: [], unexpectedKeys: [] });
    expect([...net.getParameter('classifier.3.weight').toArray()]).toEqual([...src.getParameter('classifier.3.weight').toArray()]);
    // and back: the slice's own state dict loads into the full model with strict: false
    const back = model();
    expect(back.loadStateDict(net.classifier.stateDict(), { strict: false }).missingKeys).toEqual([]);
  });

  it('nested slices keep keys; negative bounds count from the end', () => {
    const full = model();
    expect(full.slice(1).slice(1).namedMembers().map(([k]) => k)).toEqual(['2', '3']);
    expect(Object.keys(full.slice(1).slice(-1).stateDict())).toEqual(['3.weight', '3.bias']);
    expect(full.slice(1, -1).namedMembers().map(([k]) => k)).toEqual(['1', '2']);
    const named = new nn.Sequential({ fc: new nn.Linear(2, 2), act: new nn.ReLU(), out: new nn.Linear(2, 1) });
    expect(Object.keys(named.slice(1).stateDict())).toEqual(['out.weight', 'out.bias']);
  });

  it('append on a slice never replaces a member (it takes the next free number)', () => {
    const tail = model().slice(2); // keys '2', '3'
    const extra = new nn.Tanh();
    tail.append(extra);
    expect(tail.namedMembers().map(([k]) => k)).toEqual(['2', '3', '4']);
    expect(tail.get(-1)).toBe(extra);
    const fresh = new nn.Sequential(new nn.ReLU());
    fresh.append(new nn.Tanh());
    expect(fresh.namedMembers().map(([k]) => k)).toEqual(['0', '1']);
  });

  it('jit.script and jit.trace of a slice name parameters by the original keys and match eager', () => {
    manualSeed(2);
    const tail = model().slice(1);
    tail.eval();
    const x = randn([3, 6]);
    const s = jit.script(tail, { inputs: [x] });
    const text = s.graph.toString();
    expect(text).toContain('param %1.weight');
    expect(text).toContain('param %3.weight');
    expect(text).not.toContain('param %0.weight');
    close(s.forward(x) as Tensor, noGrad(() => tail.forward(x)) as Tensor);
    const t = jit.trace(tail, [x]);
    expect(t.graph.toString()).toContain('%3.weight');
    close(t.forward(x) as Tensor, noGrad(() => tail.forward(x)) as Tensor);
  });

  it('a scripted model iterating over and indexing a sliced Sequential uses the original keys', () => {
    manualSeed(3);
    class Head extends nn.Module {
      body = model().slice(1);
      forward(x: Tensor): Tensor {
        let y = this.body.get(0).forward(x) as Tensor;
        let i = 0;
        for (const m of this.body) { if (i > 0) y = m.forward(y) as Tensor; i++; }
        return y;
      }
    }
    const h = new Head();
    h.eval();
    const x = randn([2, 6]);
    const s = jit.script(h, { inputs: [x] });
    expect(s.graph.toString()).toContain('param %body.1.weight');
    close(s.forward(x) as Tensor, noGrad(() => h.forward(x)) as Tensor);
  });
});
