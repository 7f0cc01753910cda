// nn.Module: discovery of parameters/buffers/children from fields, state dict keys and loading,
// modes, traversal and the PyTorch-style repr.
import { describe, expect, it } from 'vitest';
import { nn, Tensor, tensor, zeros, ones, randn, noGrad } from '../index.js';
import { pyFloat } from './module.js';

/** The seed model of the API docs, with smaller sizes. */
class SeedModel extends nn.Module {
  features = new nn.Sequential(
    new nn.Conv2d(3, 8, 3, { padding: 1 }), new nn.BatchNorm2d(8), new nn.ReLU(), new nn.MaxPool2d(2),
    new nn.Conv2d(8, 16, 3, { padding: 1 }), new nn.BatchNorm2d(16), new nn.ReLU(), new nn.MaxPool2d(2));
  classifier = new nn.Sequential(new nn.Dropout(0.5), new nn.Linear(16 * 2 * 2, 32), new nn.ReLU(), new nn.Linear(32, 10));
  forward(x: Tensor): Tensor {
    return this.classifier.forward(this.features.forward(x).flatten(1));
  }
}

// PyTorch's key order: per module its parameters, then its buffers, then its children in order.
const SEED_KEYS = [
  'features.0.weight', 'features.0.bias',
  'features.1.weight', 'features.1.bias', 'features.1.running_mean', 'features.1.running_var', 'features.1.num_batches_tracked',
  'features.4.weight', 'features.4.bias',
  'features.5.weight', 'features.5.bias', 'features.5.running_mean', 'features.5.running_var', 'features.5.num_batches_tracked',
  'classifier.1.weight', 'classifier.1.bias', 'classifier.3.weight', 'classifier.3.bias',
];

describe('nn.Module discovery', () => {
  it('gives PyTorch state dict keys in registration order for the seed model', () => {
    const m = new SeedModel();
    expect(Object.keys(m.stateDict())).toEqual(SEED_KEYS);
    expect(m.namedParameters().map(([n]) => n)).toEqual(SEED_KEYS.filter((k) => !/running|num_batches/.test(k)));
    expect(m.namedBuffers().map(([n]) => n)).toEqual(SEED_KEYS.filter((k) => /running|num_batches/.test(k)));
    expect(m.namedChildren().map(([n]) => n)).toEqual(['features', 'classifier']);
    expect(m.namedModules().map(([n]) => n)).toEqual(['', 'features', ...[0, 1, 2, 3, 4, 5, 6, 7].map((i) => `features.${i}`), 'classifier', ...[0, 1, 2, 3].map((i) => `classifier.${i}`)]);
    const sd = m.stateDict();
    expect(sd['features.1.num_batches_tracked'].dtype).toBe('int32');
    expect(sd['features.0.weight'].shape).toEqual([8, 3, 3, 3]);
    expect(sd['classifier.1.weight'].shape).toEqual([32, 64]);
    expect(m.parameters().every((p) => p.requiresGrad)).toBe(true);
    expect(m.buffers().some((b) => b.requiresGrad)).toBe(false);
  });

  it('classifies fields: Parameter and grad-requiring leaves are parameters, other tensors buffers', () => {
    class M extends nn.Module {
      a = new nn.Parameter(zeros([2]));
      frozen = new nn.Parameter(zeros([2]), false);
      b = zeros([3], { requiresGrad: true });
      stats = ones([4]);
      notState = [zeros([1])]; // arrays are not scanned (use ModuleList), as PyTorch ignores lists
      count = 3;
      child = new nn.Linear(2, 2);
      nothing: nn.Module | null = null;
      forward(): void {}
    }
    const m = new M();
    expect(m.namedParameters().map(([n]) => n)).toEqual(['a', 'frozen', 'b', 'child.weight', 'child.bias']);
    expect(m.namedBuffers().map(([n]) => n)).toEqual(['stats']);
    expect(Object.keys(m.stateDict())).toEqual(['a', 'frozen', 'b', 'stats', 'child.weight', 'child.bias']);
    expect(m.frozen.requiresGrad).toBe(false);
  });

  it('registerBuffer / registerParameter / addModule add members; non-persistent buffers stay out of the state dict', () => {
    class M extends nn.Module {
      w = new nn.Parameter(ones([2]));
      constructor() {
        super();
        this.registerBuffer('mean', zeros([2]));
        this.registerBuffer('scratch', zeros([2]), { persistent: false });
        this.registerParameter('extra', zeros([1]));
        this.addModule('head', new nn.Linear(2, 1));
      }
      forward(): void {}
    }
    const m = new M();
    expect(m.namedBuffers().map(([n]) => n)).toEqual(['mean', 'scratch']);
    expect(m.namedParameters().map(([n]) => n)).toEqual(['w', 'extra', 'head.weight', 'head.bias']);
    expect(Object.keys(m.stateDict())).toEqual(['w', 'extra', 'mean', 'head.weight', 'head.bias']);
    expect(m.getBuffer('mean')).toBe(Reflect.get(m, 'mean'));
    expect(m.getParameter('head.weight')).toBe(m.getSubmodule('head').getParameter('weight'));
    expect(() => m.registerBuffer('forward', zeros([1]))).toThrow(/already a member/);
    expect(() => m.addModule('a.b', new nn.Identity())).toThrow(/must not contain '.'/);
    expect(() => m.registerBuffer('training', zeros([1]))).toThrow(/already an attribute/);
    expect(() => m.getSubmodule('nope')).toThrow(/has no submodule 'nope'/);
    expect(() => m.getParameter('head.nope')).toThrow(/Linear has no parameter 'nope'/);
  });

  it('lists shared parameters once, but keeps both state dict keys', () => {
    class Tied extends nn.Module {
      enc = new nn.Linear(3, 3);
      dec = new nn.Linear(3, 3, { bias: false });
      constructor() { super(); this.dec.weight = this.enc.weight; }
      forward(): void {}
    }
    const m = new Tied();
    expect(m.parameters().length).toBe(2);
    expect(Object.keys(m.stateDict())).toEqual(['enc.weight', 'enc.bias', 'dec.weight']);
  });
});

describe('nn.Module state dict loading', () => {
  it('round-trips values into existing tensors (in place, version bumped, no history)', () => {
    const a = new SeedModel(), b = new SeedModel();
    const w = b.getParameter('features.0.weight');
    const v0 = w._version;
    const res = b.loadStateDict(a.stateDict());
    expect(res).toEqual({ missingKeys: [], unexpectedKeys: [] });
    expect(b.getParameter('features.0.weight')).toBe(w); // same tensor object
    expect(w._version).toBeGreaterThan(v0);
    expect(w.isLeaf && w.requiresGrad).toBe(true);
    for (const [k, t] of Object.entries(a.stateDict())) expect(b.stateDict()[k].toArray()).toEqual(t.toArray());
  });

  it('strict loading reports every missing and unexpected key in one error', () => {
    const m = new SeedModel();
    const sd = m.stateDict();
    delete sd['features.0.bias'];
    delete sd['classifier.3.weight'];
    sd['features.9.weight'] = zeros([1]);
    let msg = '';
    try { m.loadStateDict(sd); } catch (e) { msg = (e as Error).message; }
    expect(msg).toContain('Missing key(s) in state dict: "features.0.bias", "classifier.3.weight"');
    expect(msg).toContain('Unexpected key(s) in state dict: "features.9.weight"');
    expect(msg).toContain('SeedModel');
  });

  it('non-strict loading copies the matching keys and returns the others', () => {
    const src = new SeedModel(), dst = new SeedModel();
    const sd = src.stateDict();
    delete sd['classifier.3.bias'];
    sd['extra.key'] = zeros([2]);
    const before = dst.getParameter('classifier.3.bias').toArray();
    const res = dst.loadStateDict(sd, { strict: false });
    expect(res.missingKeys).toEqual(['classifier.3.bias']);
    expect(res.unexpectedKeys).toEqual(['extra.key']);
    expect(dst.getParameter('classifier.3.bias').toArray()).toEqual(before);
    expect(dst.getParameter('classifier.1.weight').toArray()).toEqual(src.getParameter('classifier.1.weight').toArray());
  });

  it('a shape mismatch names the key and both shapes, even when not strict, and copies nothing', () => {
    const m = new nn.Sequential(new nn.Linear(4, 3), new nn.Linear(3, 2));
    const sd = m.stateDict();
    const good = zeros([3, 4]);
    sd['0.weight'] = good;
    sd['1.weight'] = zeros([3, 2]);
    const before = m.getParameter('0.weight').toArray();
    expect(() => m.loadStateDict(sd, { strict: false })).toThrow(/size mismatch for 1\.weight: .*shape \[3,2\].*shape in the current model is \[2,3\]/);
    expect(m.getParameter('0.weight').toArray()).toEqual(before); // nothing copied
  });

  it('casts on copy (an int32 count loads into the int32 buffer from float data)', () => {
    const bn = new nn.BatchNorm1d(2);
    const sd = bn.stateDict();
    sd.num_batches_tracked = tensor(7);
    sd.running_mean = tensor([1, 2]);
    bn.loadStateDict(sd);
    expect(bn.num_batches_tracked!.dtype).toBe('int32');
    expect(bn.num_batches_tracked!.item()).toBe(7);
    expect([...bn.runningMean!.toArray()]).toEqual([1, 2]);
  });
});

describe('nn.Module modes and utilities', () => {
  it('train()/eval() set the flag on every submodule', () => {
    const m = new SeedModel();
    expect(m.modules().every((x) => x.training)).toBe(true);
    expect(m.eval()).toBe(m);
    expect(m.modules().every((x) => !x.training)).toBe(true);
    m.train();
    expect(m.modules().every((x) => x.training)).toBe(true);
    m.classifier.train(false);
    expect(m.training).toBe(true);
    expect(m.classifier.get(0).training).toBe(false);
  });

  it('apply visits children before the parent; zeroGrad clears gradients', () => {
    const m = new nn.Sequential(new nn.Linear(2, 2), new nn.Sequential(new nn.ReLU()));
    const seen: string[] = [];
    m.apply((x) => seen.push(x.constructor.name));
    expect(seen).toEqual(['Linear', 'ReLU', 'Sequential', 'Sequential']);
    const lin = m.get(0);
    for (const p of lin.parameters()) p.grad = ones(p.shape);
    m.zeroGrad({ setToNone: false });
    expect(lin.parameters().every((p) => p.grad !== null && p.grad.toArray().every((v) => v === 0))).toBe(true);
    m.zeroGrad();
    expect(lin.parameters().every((p) => p.grad === null)).toBe(true);
  });

  it('requiresGrad_(false) freezes all parameters', () => {
    const m = new nn.Linear(2, 2).requiresGrad_(false);
    expect(m.parameters().map((p) => p.requiresGrad)).toEqual([false, false]);
  });

  it('prints like PyTorch', () => {
    const m = new SeedModel();
    expect(m.toString()).toBe([
      'SeedModel(',
      '  (features): Sequential(',
      '    (0): Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))',
      '    (1): BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)',
      '    (2): ReLU()',
      '    (3): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)',
      '    (4): Conv2d(8, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))',
      '    (5): BatchNorm2d(16, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)',
      '    (6): ReLU()',
      '    (7): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)',
      '  )',
      '  (classifier): Sequential(',
      '    (0): Dropout(p=0.5, inplace=False)',
      '    (1): Linear(in_features=64, out_features=32, bias=True)',
      '    (2): ReLU()',
      '    (3): Linear(in_features=32, out_features=10, bias=True)',
      '  )',
      ')',
    ].join('\n'));
    expect(new nn.LSTM(10, 20, { numLayers: 2, batchFirst: true }).toString()).toBe('LSTM(10, 20, num_layers=2, batch_first=True)');
    expect(new nn.MultiheadAttention(8, 2).toString()).toBe('MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)\n)');
    expect(new nn.Conv2d(4, 8, [3, 5], { stride: 2, groups: 2, bias: false }).toString())
      .toBe('Conv2d(4, 8, kernel_size=(3, 5), stride=(2, 2), groups=2, bias=False)');
    expect(new nn.Embedding(10, 3, { paddingIdx: -1 }).toString()).toBe('Embedding(10, 3, padding_idx=9)');
    expect(new nn.LayerNorm(5).toString()).toBe('LayerNorm((5,), eps=1e-05, elementwise_affine=True)');
    // Python's float repr (checked against CPython's repr of the same values).
    expect([1e-5, 0.1, 1, 1e-4, 1.5e-7, 1e16, 123.25, 1e15].map(pyFloat)).toEqual(['1e-05', '0.1', '1.0', '0.0001', '1.5e-07', '1e+16', '123.25', '1000000000000000.0']);
    expect(new nn.Parameter(zeros([1])).toString()).toMatch(/^Parameter containing:\ntensor\(/);
  });

  it('exposes what a compiler reads: field names, children, parameters, training, method source', () => {
    const m = new SeedModel();
    expect(Object.keys(m)).toEqual(['training', 'features', 'classifier']);
    expect(Object.getPrototypeOf(m).forward.toString()).toContain('this.classifier.forward');
  });
});

describe('containers', () => {
  it('Sequential chains forward, indexes, appends and slices', () => {
    const a = new nn.Identity(), r = new nn.ReLU();
    const s = new nn.Sequential(a, r);
    expect(s.length).toBe(2);
    expect(s.get(-1)).toBe(r);
    expect([...s]).toEqual([a, r]);
    s.append(new nn.Tanh());
    expect(s.namedChildren().map(([n]) => n)).toEqual(['0', '1', '2']);
    expect(s.slice(1).length).toBe(2);
    const y = s.forward(tensor([-1, 0.5]));
    expect(y.toArray()[0]).toBe(0);
    expect(y.toArray()[1]).toBeCloseTo(Math.tanh(0.5), 6);
    const named = new nn.Sequential({ fc: new nn.Linear(2, 2), act: new nn.ReLU() });
    expect(Object.keys(named.stateDict())).toEqual(['fc.weight', 'fc.bias']);
    expect(() => s.get(5)).toThrow(/out of range/);
  });

  it('ModuleList registers its items as 0, 1, … and supports insert', () => {
    const l = new nn.ModuleList([new nn.Linear(1, 1), new nn.Linear(1, 2)]);
    l.insert(0, new nn.Linear(1, 3));
    expect(l.length).toBe(3);
    expect(Object.keys(l.stateDict())).toEqual(['0.weight', '0.bias', '1.weight', '1.bias', '2.weight', '2.bias']);
    expect(l.getParameter('0.weight').shape).toEqual([3, 1]);
    expect(() => l.forward()).toThrow(/no forward/);
  });

  it('ModuleDict keeps insertion order, even for integer-like keys', () => {
    const d = new nn.ModuleDict({ b: new nn.Linear(1, 1) });
    d.set('10', new nn.Linear(1, 1)).set('2', new nn.Linear(1, 1));
    expect(d.keys()).toEqual(['b', '10', '2']);
    expect(Object.keys(d.stateDict())).toEqual(['b.weight', 'b.bias', '10.weight', '10.bias', '2.weight', '2.bias']);
    d.pop('10');
    expect(d.keys()).toEqual(['b', '2']);
    expect(() => d.set('keys', new nn.Identity())).toThrow(/already a member/);
    expect(() => d.get('zz')).toThrow(/no module under key 'zz'/);
  });
});

describe('nn.Parameter', () => {
  it('shares storage with the wrapped tensor and is a leaf that requires grad', () => {
    const t = randn([2, 2]);
    const p = new nn.Parameter(t);
    expect(p.isLeaf && p.requiresGrad).toBe(true);
    noGrad(() => p.fill_(3));
    expect([...t.toArray()]).toEqual([3, 3, 3, 3]);
    expect(p).toBeInstanceOf(Tensor);
  });
});
