// jit.loadOnnx: an ONNX model (as PyTorch's exporter writes it, opsets 13–17) → a Kiln graph.
// Graph inputs keep their names and dim_params become Kiln symbols; initializers become named
// parameters (or stay constants where only shapes read them); If/Loop become Kiln if/loop
// regions; every other node goes through its IMPORT_RULES entry. The result is a LoadedOnnx
// module: forward runs it on the CPU, and passes, WGSL and .tsgraph work as for any graph.
// Invariant: an op the importer does not know is an error naming the node, its op type and opset.

import { readFileSync } from 'node:fs';
import { GraphBuilder, tensorType, type Graph, type IRType, type TensorIRType, type Value } from '@kiln/ir-spec';
import { decodeModel, type GraphProto, type NodeProto, type ValueInfoProto } from './proto.js';
import { Attrs, IMPORT_RULES, type ImportContext } from './import-ops.js';
import { lstm } from './import-lstm.js';
import { gru } from './import-gru.js';
import { constVal, kilnDtype, materialize, nextConstName, OnnxImportError, runVal, tensorData, type ConstVal, type IVal, type SymbolTable } from './import-values.js';

const SUPPORTED_OPSETS = [13, 14, 15, 16, 17];

/** Kiln names allow letters, digits, `_` and `.`; other characters become `_`. */
const kilnName = (s: string) => s.replace(/[^A-Za-z0-9_.]/g, '_').replace(/^([^A-Za-z_])/, '_$1');

class Importer {
  private readonly scopes: Map<string, IVal>[] = [new Map()];
  private readonly initializers = new Map<string, ConstVal>();
  private readonly params = new Map<string, Value>();
  readonly symbols: SymbolTable = new Map();
  private readonly usedNames = new Set<string>();

  constructor(readonly b: GraphBuilder, readonly opset: number) {}

  lookup(name: string, where: string): IVal | null {
    if (name === '') return null;
    for (let i = this.scopes.length - 1; i >= 0; i--) {
      const v = this.scopes[i].get(name);
      if (v) return v;
    }
    const init = this.initializers.get(name);
    if (init) return init;
    throw new OnnxImportError(`${where}: input '${name}' is defined by no earlier node, input or initializer`);
  }
  define(name: string, v: IVal): void { if (name !== '') this.scopes[this.scopes.length - 1].set(name, v); }

  addInitializer(name: string, c: ConstVal): void { this.initializers.set(name, c); }

  private uniqueName(base: string): string {
    let name = kilnName(base), k = 1;
    while (this.usedNames.has(name)) name = `${kilnName(base)}_${k++}`;
    this.usedNames.add(name);
    return name;
  }
  reserve(name: string): void { this.usedNames.add(name); }

  /** A constant as a Kiln value: a float initializer becomes a named parameter, the rest constants. */
  value(v: IVal): Value {
    if (v.kind === 'value') return v.v;
    for (const [name, init] of this.initializers) {
      if (init !== v) continue;
      let p = this.params.get(name);
      if (!p) {
        const arr = v.dtype === 'float32' ? Float32Array.from(v.data as number[]) : v.dtype === 'int32' ? Int32Array.from(v.data as number[]) : Uint8Array.from(v.data as number[]);
        p = v.shape.length === 0 ? materialize(this.b, v, this.symbols, () => this.uniqueName(name)) : this.b.param(this.uniqueName(name), { dtype: v.dtype, shape: v.shape, data: arr });
        this.params.set(name, p);
      }
      return p;
    }
    return materialize(this.b, v, this.symbols, () => this.uniqueName(nextConstName('onnx_const')));
  }

  /** Imports the nodes of `g` into the current block. */
  nodes(g: GraphProto): void {
    for (const node of g.node) this.node(node);
  }

  private node(node: NodeProto): void {
    const where = `loadOnnx: node '${node.name || node.output[0]}' (${node.op_type}, opset ${this.opset})`;
    if (node.domain && node.domain !== 'ai.onnx') throw new OnnxImportError(`${where}: operators of domain '${node.domain}' are not supported`);
    const ins = node.input.map((n) => this.lookup(n, where));
    const a = new Attrs(node.attribute, where);
    const ctx: ImportContext = {
      b: this.b, opset: this.opset, where,
      value: (v) => this.value(v),
      subgraph: (g, inputs) => this.subgraph(g, inputs),
    };
    let outs: IVal[];
    if (node.op_type === 'If') outs = this.ifNode(ctx, ins, a, node);
    else if (node.op_type === 'Loop') outs = this.loopNode(ctx, ins, a, node);
    else if (node.op_type === 'LSTM') outs = lstm(ctx, node, ins, a);
    else if (node.op_type === 'GRU') outs = gru(ctx, ins, a);
    else {
      const rule = IMPORT_RULES[node.op_type];
      if (!rule) throw new OnnxImportError(`${where} is not supported; Kiln imports ${supportedOnnxOps().join(', ')}`);
      try {
        outs = rule(ctx, node, ins, a);
      } catch (e) {
        if (e instanceof OnnxImportError) throw e;
        throw new OnnxImportError(`${where}: ${(e as Error).message}`);
      }
    }
    node.output.forEach((name, i) => { if (outs[i]) this.define(name, outs[i]); });
  }

  /** A subgraph's nodes in a new name scope with its inputs bound; returns its outputs' values. */
  subgraph(g: GraphProto, inputs: readonly IVal[]): IVal[] {
    this.scopes.push(new Map());
    try {
      g.input.forEach((inp, i) => { if (inputs[i]) this.define(inp.name, inputs[i]); });
      for (const init of g.initializer ?? []) this.define(init.name ?? '', tensorData(init, `loadOnnx: subgraph '${g.name ?? ''}'`));
      this.nodes(g);
      return g.output.map((o) => this.lookup(o.name, `loadOnnx: subgraph '${g.name ?? ''}' output`)!);
    } finally {
      this.scopes.pop();
    }
  }

  private ifNode(ctx: ImportContext, ins: readonly (IVal | null)[], a: Attrs, node: NodeProto): IVal[] {
    const cond = ins[0]!;
    const thenG = a.graph('then_branch'), elseG = a.graph('else_branch');
    // A condition known at import time keeps only its branch.
    if (cond.kind === 'const') return this.subgraph(Number(cond.data[0]) ? thenG : elseG, []);
    const c = this.b.op1('item', [cond.v]);
    const branch = (g: GraphProto) => () => this.subgraph(g, []).map((v) => this.value(v));
    const outs = this.b.if(c, branch(thenG), branch(elseG));
    if (outs.length !== node.output.length) throw new OnnxImportError(`${ctx.where}: the branches yield ${outs.length} values for ${node.output.length} outputs`);
    return outs.map(runVal);
  }

  private loopNode(ctx: ImportContext, ins: readonly (IVal | null)[], a: Attrs, node: NodeProto): IVal[] {
    const body = a.graph('body');
    const [M, cond, ...init] = ins;
    const nCarried = init.length;
    if (body.output.length - 1 > nCarried) throw new OnnxImportError(`${ctx.where}: Loop scan outputs (body outputs beyond the carried values) are not supported`);
    const b = this.b;
    let maxTrips: Value | null = null;
    if (M) {
      if (M.kind === 'const') {
        const d = M.data[0];
        maxTrips = typeof d === 'number' ? b.scalar(Math.min(d, 2147483647), 'int32') : materializeScalar(this, M);
      } else maxTrips = b.op1('item', [M.v]);
    }
    let c: Value;
    if (!cond || cond.kind === 'const') c = b.scalar(cond ? Number(cond.data[0]) !== 0 : true, 'bool');
    else c = b.op1('item', [cond.v]);
    const initValues = init.map((v) => this.value(v!));
    const outs = b.loop(maxTrips, c, initValues, (i, carried) => {
      const iter = runVal(b.op1('to_tensor', [i], { dtype: 'int32' }));
      const r = this.subgraph(body, [iter, constVal('bool', [], [1]), ...carried.map(runVal)]);
      const next = r.slice(1).map((v) => this.value(v));
      const go = r[0].kind === 'const' ? b.scalar(Number(r[0].data[0]) !== 0, 'bool') : b.op1('item', [r[0].v]);
      return { next, continue: go };
    });
    return outs.map(runVal);
  }
}

function materializeScalar(im: Importer, c: ConstVal): Value {
  return im.b.op1('item', [im.value(c)]);
}

function inputType(vi: ValueInfoProto, where: string): IRType {
  const tt = vi.type?.tensor_type;
  if (!tt) throw new OnnxImportError(`${where}: input '${vi.name}' is not a tensor`);
  const dims = (tt.shape?.dim ?? []).map((d, axis) => {
    if (d.dim_value !== undefined && d.dim_value !== null && !d.dim_param) return Number(d.dim_value);
    return kilnName(d.dim_param || `${vi.name}_dim${axis}`);
  });
  return tensorType(kilnDtype(tt.elem_type, `${where}: input '${vi.name}'`), dims);
}

/** The ONNX op types loadOnnx imports. */
export function supportedOnnxOps(): string[] {
  return [...Object.keys(IMPORT_RULES), 'If', 'Loop', 'LSTM', 'GRU'].sort();
}

/** Builds the Kiln graph of an ONNX model (bytes or a file path). */
export function onnxToGraph(source: Uint8Array | string): Graph {
  const bytes = typeof source === 'string' ? new Uint8Array(readFileSync(source)) : source;
  const model = decodeModel(bytes);
  const opsetEntry = model.opset_import.find((o) => !o.domain || o.domain === 'ai.onnx');
  const opset = Number(opsetEntry?.version ?? 0);
  if (!SUPPORTED_OPSETS.includes(opset)) throw new OnnxImportError(`loadOnnx: opset ${opset} is not supported; Kiln imports opsets 13 to 17 (re-export with opset_version=17)`);
  const g = model.graph;
  const b = new GraphBuilder(kilnName(g.name || 'onnx'), { producer: `${model.producer_name ?? ''} ${model.producer_version ?? ''}`.trim(), 'onnx.opset': String(opset) });
  const im = new Importer(b, opset);
  const initNames = new Set((g.initializer ?? []).map((t) => t.name ?? ''));
  for (const inp of g.input) {
    if (initNames.has(inp.name)) continue;
    const name = kilnName(inp.name);
    im.reserve(name);
    const v = b.input(name, inputType(inp, 'loadOnnx'));
    (v.type as TensorIRType).shape.forEach((d, axis) => {
      if (typeof d === 'string' && !im.symbols.has(d)) im.symbols.set(d, { v, axis });
    });
    im.define(inp.name, runVal(v));
  }
  for (const t of g.initializer ?? []) im.addInitializer(t.name ?? '', tensorData(t, `loadOnnx: initializer '${t.name ?? ''}'`));
  im.nodes(g);
  for (const out of g.output) {
    const v = im.lookup(out.name, 'loadOnnx: graph output');
    b.output(kilnName(out.name), im.value(v!));
  }
  return b.build();
}
