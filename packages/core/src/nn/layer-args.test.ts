// Layer constructors accept PyTorch's forms — positional arguments in PyTorch's order, or any of
// them by name in a trailing options object — and refuse everything else with an error naming
// the layer, the argument and the accepted forms; inplace really runs in place.
import { describe, it, expect } from 'vitest';
import { nn, tensor, randn, manualSeed, ones, type Tensor } from '../index.js';
import { bindLayerArgs, usage, type LayerSignature } from './layer-args.js';

type Ctor = new (...args: any[]) => nn.Module;
/** Each row: a layer, equivalent argument lists (all must give the same repr), and a reference. */
const SAME: [string, Ctor, unknown[][]][] = [
  ['ReLU', nn.ReLU, [[true], [{ inplace: true }]]],
  ['SiLU', nn.SiLU, [[true], [{ inplace: true }]]],
  ['LeakyReLU', nn.LeakyReLU, [[0.2, true], [0.2, { inplace: true }], [{ negativeSlope: 0.2, inplace: true }]]],
  ['GELU', nn.GELU, [['tanh'], [{ approximate: 'tanh' }]]],
  ['Softmax', nn.Softmax, [[1], [{ dim: 1 }]]],
  ['LogSoftmax', nn.LogSoftmax, [[-1], [{ dim: -1 }]]],
  ['Dropout', nn.Dropout, [[0.2, true], [0.2, { inplace: true }], [{ p: 0.2, inplace: true }]]],
  ['Linear', nn.Linear, [[4, 3, false], [4, 3, { bias: false }], [4, { outFeatures: 3, bias: false }], [{ inFeatures: 4, outFeatures: 3, bias: false }]]],
  ['Flatten', nn.Flatten, [[0, 2], [{ startDim: 0, endDim: 2 }], [0, { endDim: 2 }]]],
  ['Unflatten', nn.Unflatten, [[1, [2, 3]], [{ dim: 1, unflattenedSize: [2, 3] }]]],
  ['Conv1d', nn.Conv1d, [[3, 8, 3, 2, 1], [3, 8, 3, { stride: 2, padding: 1 }], [3, 8, { kernelSize: 3, stride: 2, padding: 1 }]]],
  ['Conv2d', nn.Conv2d, [[3, 64, 3, 1, 1, 1, 1, false], [3, 64, 3, { padding: 1, bias: false }], [3, 64, { kernelSize: 3, padding: 1, bias: false }],
    [{ inChannels: 3, outChannels: 64, kernelSize: 3, padding: 1, bias: false }], [3, 64, 3, 1, { padding: 1, bias: false }]]],
  ['ConvTranspose2d', nn.ConvTranspose2d, [[8, 4, 3, 2, 1, 1], [8, 4, 3, { stride: 2, padding: 1, outputPadding: 1 }], [8, 4, { kernelSize: 3, stride: 2, padding: 1, outputPadding: 1 }]]],
  ['BatchNorm1d', nn.BatchNorm1d, [[5, 1e-3, 0.2, false], [5, { eps: 1e-3, momentum: 0.2, affine: false }], [{ numFeatures: 5, eps: 1e-3, momentum: 0.2, affine: false }]]],
  ['BatchNorm2d', nn.BatchNorm2d, [[5, 1e-3, null], [5, { eps: 1e-3, momentum: null }], [{ numFeatures: 5, eps: 1e-3, momentum: null }]]],
  ['LayerNorm', nn.LayerNorm, [[[4, 4], 1e-6, false], [[4, 4], { eps: 1e-6, elementwiseAffine: false }], [{ normalizedShape: [4, 4], eps: 1e-6, elementwiseAffine: false }]]],
  ['GroupNorm', nn.GroupNorm, [[2, 4, 1e-3], [2, 4, { eps: 1e-3 }], [{ numGroups: 2, numChannels: 4, eps: 1e-3 }]]],
  ['MaxPool2d', nn.MaxPool2d, [[3, 2, 1], [3, { stride: 2, padding: 1 }], [{ kernelSize: 3, stride: 2, padding: 1 }]]],
  ['AvgPool2d', nn.AvgPool2d, [[2, 1, 1], [2, { stride: 1, padding: 1 }], [{ kernelSize: 2, stride: 1, padding: 1 }]]],
  ['AdaptiveAvgPool2d', nn.AdaptiveAvgPool2d, [[[7, null]], [{ outputSize: [7, null] }]]],
  ['Embedding', nn.Embedding, [[10, 3, 0], [10, 3, { paddingIdx: 0 }], [{ numEmbeddings: 10, embeddingDim: 3, paddingIdx: 0 }]]],
  ['LSTM', nn.LSTM, [[4, 6, 2, true, true], [4, 6, { numLayers: 2, batchFirst: true }], [{ inputSize: 4, hiddenSize: 6, numLayers: 2, batchFirst: true }]]],
  ['GRU', nn.GRU, [[4, 6, 1, false], [4, 6, { bias: false }], [{ inputSize: 4, hiddenSize: 6, bias: false }]]],
  ['MultiheadAttention', nn.MultiheadAttention, [[8, 2, 0, false], [8, 2, { bias: false }], [{ embedDim: 8, numHeads: 2, bias: false }]]],
];

const state = (m: nn.Module) => Object.entries(m.stateDict()).map(([k, t]) => `${k}:${t.shape.join('x')}`);

describe('layer constructors accept PyTorch forms', () => {
  it.each(SAME)('%s: positional and named forms build the same layer', (_name, C, forms) => {
    const built = forms.map((args) => new C(...args));
    for (const m of built) {
      expect(m.toString()).toBe(built[0].toString());
      expect(state(m)).toEqual(state(built[0]));
    }
  });

  it('the forms of the issue: ReLU(true), Dropout({ p }), Conv2d(3, 64, { kernelSize: 3 })', () => {
    expect(new nn.ReLU(true).inplace).toBe(true);
    expect(new nn.Dropout({ p: 0.5 }).p).toBe(0.5);
    expect(new nn.Dropout({ p: 0.1 }).toString()).toBe('Dropout(p=0.1, inplace=False)');
    const c = new nn.Conv2d(3, 64, { kernelSize: 3 });
    expect(c.weight.shape).toEqual([64, 3, 3, 3]);
    expect(new nn.Conv2d(3, 64, 3, 1, 1).toString()).toBe('Conv2d(3, 64, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))');
  });

  it('losses take weight positionally and the rest by name', () => {
    const w = tensor([1, 2, 3]);
    expect(new nn.CrossEntropyLoss(w, { labelSmoothing: 0.1 }).labelSmoothing).toBe(0.1);
    expect(new nn.CrossEntropyLoss({ weight: w }).weight).toBe(w);
    expect(new nn.NLLLoss(w).weight).toBe(w);
    expect(new nn.SmoothL1Loss({ beta: 0.5 }).beta).toBe(0.5);
    expect(new nn.KLDivLoss({ reduction: 'batchmean' }).reduction).toBe('batchmean');
  });
});

describe('inplace runs in place with the same numbers', () => {
  const cases: [string, () => nn.Module, () => nn.Module][] = [
    ['ReLU', () => new nn.ReLU(true), () => new nn.ReLU()],
    ['LeakyReLU', () => new nn.LeakyReLU(0.1, true), () => new nn.LeakyReLU(0.1)],
    ['SiLU', () => new nn.SiLU(true), () => new nn.SiLU()],
  ];
  it.each(cases)('%s(inplace) writes into its input and matches the out-of-place layer', (_n, inplace, plain) => {
    manualSeed(0);
    const x = randn([3, 4]);
    const want = plain().forward(x.clone()) as Tensor;
    const y = inplace().forward(x) as Tensor;
    expect([...x.toArray()]).toEqual([...want.toArray()]);
    expect([...y.toArray()]).toEqual([...want.toArray()]);
  });
  it('Dropout(p, true) zeroes the input itself in training mode and is the identity in eval', () => {
    manualSeed(1);
    const x = ones([1000]);
    const d = new nn.Dropout(0.5, true);
    d.forward(x);
    const zeros = [...x.toArray()].filter((v) => v === 0).length;
    expect(zeros).toBeGreaterThan(350);
    expect(zeros).toBeLessThan(650);
    d.eval();
    const z = ones([4]);
    expect([...(d.forward(z) as Tensor).toArray()]).toEqual([1, 1, 1, 1]);
  });
});

describe('layer constructors refuse what they would ignore', () => {
  const bad: [string, () => unknown, RegExp][] = [
    ['positional bool of the wrong kind', () => new nn.ReLU(1 as never), /^ReLU: inplace \(argument 1\) must be a boolean \(true or false\), got number 1; accepted forms: new nn\.ReLU\(\{ inplace \}\)$/],
    ['unknown option', () => new nn.ReLU({ inPlace: true } as never), /^ReLU: unknown option 'inPlace' \(accepted: inplace\); accepted forms: new nn\.ReLU\(\{ inplace \}\)$/],
    ['options object where a size goes, not last', () => new nn.Conv2d(3, 64, { kernelSize: 3 } as never, { padding: 1 } as never), /^Conv2d: kernelSize \(argument 3\) must be an integer or an array of integers, got the object \{"kernelSize":3\} \(an options object can only be the last argument\); accepted forms: new nn\.Conv2d\(inChannels, outChannels, kernelSize, \{ stride, padding, dilation, groups, bias, paddingMode \}\) or new nn\.Conv2d\(\{ inChannels, outChannels, kernelSize, stride, padding, dilation, groups, bias, paddingMode \}\)$/],
    ['missing required', () => new nn.Conv2d(3, 64 as never), /^Conv2d: missing required argument kernelSize; accepted forms: new nn\.Conv2d\(inChannels/],
    ['given twice', () => new nn.Linear(4, 3, { outFeatures: 2 } as never), /^Linear: outFeatures is given twice, as argument 2 and as option 'outFeatures'; pass it once$/],
    ['too many positionals', () => new (nn.Dropout as Ctor)(0.5, true, 3), /^Dropout: takes at most 2 positional argument\(s\) \(p, inplace\), got 3; accepted forms: new nn\.Dropout\(\{ p, inplace \}\)$/],
    ['string where a number goes', () => new nn.Dropout('0.5' as never), /^Dropout: p \(argument 1\) must be a number, got the string '0\.5'/],
    ['args to a layer without any', () => new (nn.Sigmoid as Ctor)(true), /^Sigmoid: takes at most 0 positional argument\(s\) \(\), got 1; accepted forms: new nn\.Sigmoid\(\)$/],
    ['unknown Conv option (PyTorch device)', () => new nn.Conv2d(3, 4, 3, { device: 'cpu' } as never), /^Conv2d: unknown option 'device' \(accepted: inChannels, outChannels, kernelSize, stride, padding, dilation, groups, bias, paddingMode\)/],
    ['Conv2d has no outputPadding', () => new nn.Conv2d(3, 4, 3, { outputPadding: 1 } as never), /^Conv2d: unknown option 'outputPadding'/],
    ['wrong enum', () => new nn.GELU('fast' as never), /^GELU: approximate \(argument 1\) must be one of 'none', 'tanh', got the string 'fast'/],
    ['BatchNorm affine as a number', () => new nn.BatchNorm2d(4, { affine: 0 } as never), /^BatchNorm2d: affine \(option 'affine'\) must be a boolean \(true or false\), got number 0/],
    ['LayerNorm typo', () => new nn.LayerNorm(4, { elementwise_affine: false } as never), /^LayerNorm: unknown option 'elementwise_affine' \(accepted: normalizedShape, eps, elementwiseAffine, bias\)/],
    ['MaxPool2d snake_case', () => new nn.MaxPool2d(2, { ceil_mode: true } as never), /^MaxPool2d: unknown option 'ceil_mode'/],
    ['AvgPool2d bool for padding', () => new nn.AvgPool2d(2, 2, true as never), /^AvgPool2d: padding \(argument 3\) must be an integer or an array of integers, got boolean true/],
    ['Embedding weight not a tensor', () => new nn.Embedding(3, 2, { weight: [[1, 2]] } as never), /^Embedding: weight \(option 'weight'\) must be a Tensor, got the array/],
    ['LSTM batch_first', () => new nn.LSTM(4, 4, { batch_first: true } as never), /^LSTM: unknown option 'batch_first' \(accepted: inputSize, hiddenSize, numLayers, bias, batchFirst, dropout, bidirectional\)/],
    ['MHA addBiasKv', () => new nn.MultiheadAttention(8, 2, { addBiasKv: true } as never), /^MultiheadAttention: unknown option 'addBiasKv'/],
    ['loss typo', () => new nn.CrossEntropyLoss({ label_smoothing: 0.1 } as never), /^CrossEntropyLoss: unknown option 'label_smoothing' \(accepted: weight, ignoreIndex, reduction, labelSmoothing\)/],
    ['loss bad reduction', () => new nn.MSELoss({ reduction: 'avg' } as never), /^MSELoss: reduction \(option 'reduction'\) must be one of 'none', 'mean', 'sum', got the string 'avg'/],
    ['loss positional it does not take', () => new (nn.MSELoss as Ctor)(true), /^MSELoss: takes at most 0 positional argument\(s\) \(\), got 1; accepted forms: new nn\.MSELoss\(\{ reduction \}\)$/],
    ['Flatten object dim', () => new nn.Flatten({ start_dim: 1 } as never), /^Flatten: unknown option 'start_dim'/],
    ['Unflatten missing size', () => new (nn.Unflatten as Ctor)(1), /^Unflatten: missing required argument unflattenedSize/],
    ['AdaptiveAvgPool2d object', () => new nn.AdaptiveAvgPool2d({ size: 1 } as never), /^AdaptiveAvgPool2d: unknown option 'size'/],
  ];
  it.each(bad)('%s', (_what, make, msg) => { expect(make).toThrow(msg); });

  it('range checks of the layers still apply after binding', () => {
    expect(() => new nn.Dropout({ p: 1.5 })).toThrow(/Dropout: probability has to be between 0 and 1, but got 1.5/);
    expect(() => new nn.ConvTranspose2d(4, 4, 3, { padding: 'same' } as never)).toThrow(/only supported by non-transposed/);
    expect(() => new nn.Conv2d(3, 4, 3, { paddingMode: 'reflect' })).toThrow(/paddingMode 'reflect' is not supported; only 'zeros' is/);
  });
});

describe('bindLayerArgs', () => {
  const SIG: LayerSignature = { layer: 'Thing', required: 1, positional: [{ name: 'a', kind: 'int' }, { name: 'b', kind: 'bool' }], keywordOnly: [{ name: 'c', kind: 'number', nullable: true }] };
  it('binds positional values, names, trailing undefineds and nulls', () => {
    expect(bindLayerArgs(SIG, [1, true])).toEqual({ a: 1, b: true });
    expect(bindLayerArgs(SIG, [1, undefined])).toEqual({ a: 1 });
    expect(bindLayerArgs(SIG, [{ a: 2, c: null }])).toEqual({ a: 2, c: null });
    expect(bindLayerArgs(SIG, [1, { c: 0.5, b: undefined }])).toEqual({ a: 1, c: 0.5 });
    expect(usage(SIG)).toBe('new nn.Thing(a, { b, c }) or new nn.Thing({ a, b, c })');
  });
  it('refuses a keyword-only parameter given positionally', () => {
    expect(() => bindLayerArgs(SIG, [1, true, 0.5])).toThrow(/^Thing: takes at most 2 positional argument\(s\) \(a, b\), got 3/);
  });
});
