// jit.exportOnnx: a Kiln graph (traced, scripted or optimized) → an ONNX ModelProto. Graph
// inputs keep their names (or `inputNames`), parameters and stored constants become
// initializers under their Kiln names, symbolic dims become dim_params named as in Kiln (or as
// `dynamicAxes` says), `if`/`loop` regions become ONNX If/Loop subgraphs, and every other node
// goes through its EXPORT_RULES entry. Kiln scalars are 0-d ONNX tensors.
// Invariant: the model computes what the Kiln graph computes (tests run both in ONNX Runtime).

import { writeFileSync } from 'node:fs';
import { Graph, isTensor, type Block, type DType, type IRType, type Node, type Value } from '@kiln/ir-spec';
import { encodeModel, ONNX_DTYPE, type GraphProto, type ModelProtoObject, type ValueInfoProto } from './proto.js';
import { KILN_TO_ONNX_DTYPE, OnnxExportError, OnnxWriter, tensorProto, type SymbolSource } from './export-writer.js';
import { EXPORT_RULES, NO_ONNX_FORM, cast } from './export-ops.js';

export interface ExportOnnxOptions {
  /** ONNX names of the graph inputs, in order (default: the Kiln input names). */
  inputNames?: readonly string[];
  /** ONNX names of the graph outputs, in order (default: the Kiln output names). */
  outputNames?: readonly string[];
  /**
   * Symbolic axes per input/output name, as torch.onnx.export: `{ input: { 0: 'batch_size' } }`.
   * A named axis that is symbolic in Kiln is renamed everywhere; a concrete one fails (trace
   * with `dynamicAxes` or script the model so the graph does not bake that size in).
   */
  dynamicAxes?: Readonly<Record<string, Readonly<Record<number, string>>>>;
  /** The default ONNX opset (13–17; default 17). */
  opsetVersion?: number;
}

/** Anything with a Kiln graph: a traced, scripted, frozen or optimized module, or a Graph. */
export type OnnxExportable = Graph | { readonly graph: Graph };

const SCALAR_OPS: Record<string, string> = {
  add: 'Add', sub: 'Sub', mul: 'Mul', min: 'Min', max: 'Max', pow: 'Pow',
  lt: 'Less', le: 'LessOrEqual', gt: 'Greater', ge: 'GreaterOrEqual', eq: 'Equal', and: 'And', or: 'Or',
};

function elemOf(t: IRType, where: string): DType {
  if (t.kind === 'tensor' || t.kind === 'scalar') return t.dtype;
  throw new OnnxExportError(`exportOnnx: ${where} is a ${t.kind}; ONNX graphs pass tensors only (return the tuple's elements as separate outputs)`);
}

function valueInfo(name: string, t: IRType, where: string, rename: (d: string) => string, axes?: Readonly<Record<number, string>>): ValueInfoProto {
  const elem_type = KILN_TO_ONNX_DTYPE[elemOf(t, where)];
  const shape = isTensor(t) ? t.shape : [];
  for (const axis of Object.keys(axes ?? {})) {
    if (Number(axis) >= shape.length) throw new OnnxExportError(`exportOnnx: dynamicAxes names axis ${axis} of '${name}', which has rank ${shape.length}`);
  }
  const dim = shape.map((d, i) => {
    const named = axes?.[i];
    if (named !== undefined && typeof d === 'number') {
      throw new OnnxExportError(`exportOnnx: dynamicAxes makes axis ${i} of '${name}' symbolic ('${named}'), but the graph was built for size ${d} there; trace with { dynamicAxes } (or script the model) so that axis is symbolic in Kiln`);
    }
    return typeof d === 'number' ? { dim_value: d } : { dim_param: named ?? rename(d) };
  });
  return { name, type: { tensor_type: { elem_type, shape: { dim } } } };
}

class Exporter {
  /** ONNX name(s) of each Kiln value (a tuple value has one per element). */
  private readonly names = new Map<Value, string | string[]>();
  readonly initializers: ReturnType<typeof tensorProto>[] = [];
  private readonly stored = new Set<string>();

  constructor(private readonly g: Graph, readonly w: OnnxWriter) {}

  name(v: Value | null, node: Node): string {
    if (v === null) return '';
    const n = this.names.get(v);
    if (typeof n === 'string') return n;
    throw new OnnxExportError(`exportOnnx: node '${node.op}' reads a ${n ? 'tuple' : 'value defined nowhere'}${node.meta.loc ? ` (${node.meta.loc})` : ''}`);
  }
  bind(v: Value, name: string | string[]): void { this.names.set(v, name); }

  /** The Kiln tensor `name` as an initializer (written once). */
  initializer(name: string, where: string): string {
    if (!this.stored.has(name)) {
      const t = this.g.tensors.get(name);
      if (!t) throw new OnnxExportError(`exportOnnx: ${where} refers to tensor '${name}', which the graph does not store`);
      this.initializers.push(tensorProto(name, KILN_TO_ONNX_DTYPE[t.dtype], t.shape, t.data));
      this.stored.add(name);
    }
    return name;
  }

  block(b: Block): void {
    for (const n of b.nodes) this.node(n);
  }

  private node(n: Node): void {
    const where = `node '${n.op}'${n.meta.scope ? ` in ${n.meta.scope}` : ''}${n.meta.loc ? ` (${n.meta.loc})` : ''}`;
    const w = this.w;
    const out0 = n.outputs[0];
    switch (n.op) {
      case 'constant': {
        if (typeof n.attrs.name === 'string') { this.bind(out0, this.initializer(n.attrs.name, where)); return; }
        const dt = n.attrs.dtype as DType;
        this.bind(out0, w.scalar(dt, n.attrs.value as number | boolean));
        return;
      }
      case 'scalar': this.bind(out0, w.scalar(n.attrs.dtype as DType, n.attrs.value as number | boolean)); return;
      case 'to_tensor': this.bind(out0, cast(w, this.name(n.inputs[0], n), n.attrs.dtype as DType)); return;
      case 'item': this.bind(out0, w.node1('Reshape', [this.name(n.inputs[0], n), w.int64s([])])); return;
      case 'dim': {
        const shape = w.node1('Shape', [this.name(n.inputs[0], n)]);
        const d = w.node1('Gather', [shape, w.constant(ONNX_DTYPE.INT64, [], [n.attrs.index as number])], { axis: 0 });
        this.bind(out0, w.node1('Cast', [d], { to: ONNX_DTYPE.INT32 }));
        return;
      }
      case 'scalar_op': this.bind(out0, this.scalarOp(n)); return;
      case 'tuple': this.bind(out0, n.inputs.map((v) => this.name(v, n))); return;
      case 'tuple_get': {
        const t = this.names.get(n.inputs[0]!);
        if (!Array.isArray(t)) throw new OnnxExportError(`exportOnnx: ${where} reads a value that is not a tuple`);
        this.bind(out0, t[n.attrs.index as number]);
        return;
      }
      case 'if': this.ifNode(n); return;
      case 'loop': this.loopNode(n, where); return;
      case 'host_call': throw new OnnxExportError(`exportOnnx: ${where} calls the host function '${String(n.attrs.name)}' (a @jit.ignore method); ONNX cannot call JavaScript: compile that code too or leave it out of forward`);
      case 'raise': throw new OnnxExportError(`exportOnnx: ${where} raises at run time (a @jit.unused call); ONNX has no such node: remove the call from forward`);
    }
    const rule = EXPORT_RULES[n.op];
    if (!rule && NO_ONNX_FORM[n.op]) throw new OnnxExportError(`exportOnnx: ${where} ${NO_ONNX_FORM[n.op]}`);
    if (!rule) throw new OnnxExportError(`exportOnnx: ${where} has no ONNX form (ops with one: ${Object.keys(EXPORT_RULES).sort().join(', ')})`);
    const outs = rule(w, n, n.inputs.map((v) => this.name(v, n)));
    n.outputs.forEach((v, i) => {
      if (outs[i]) this.bind(v, outs[i]);
    });
  }

  private scalarOp(n: Node): string {
    const fn = n.attrs.fn as string;
    const w = this.w;
    const out = n.outputs[0].type as { dtype: DType };
    const ins = n.inputs.map((v) => ({ name: this.name(v, n), dtype: (v!.type as { dtype: DType }).dtype }));
    // Operands in one dtype: bool for logic, else float32 when any is float32 (or the fn divides).
    const logic = fn === 'and' || fn === 'or' || fn === 'not';
    const common: DType = logic ? 'bool' : fn === 'div' || ins.some((i) => i.dtype === 'float32') ? 'float32' : 'int32';
    const [a, b] = ins.map((i) => (i.dtype === common ? i.name : cast(w, i.name, common)));
    switch (fn) {
      case 'not': return w.node1('Not', [a]);
      case 'neg': return w.node1('Neg', [a]);
      case 'ne': return w.node1('Not', [w.node1('Equal', [a, b])]);
      case 'div': return w.node1('Div', [a, b]);
      case 'floordiv': {
        const f = common === 'float32' ? w.node1('Div', [a, b]) : w.node1('Div', [cast(w, a, 'float32'), cast(w, b, 'float32')]);
        const fl = w.node1('Floor', [f]);
        return out.dtype === 'float32' ? fl : cast(w, fl, out.dtype);
      }
      case 'mod': {
        if (common === 'int32') return w.node1('Mod', [a, b], { fmod: 0 });
        return w.node1('Sub', [a, w.node1('Mul', [w.node1('Floor', [w.node1('Div', [a, b])]), b])]);
      }
    }
    const t = SCALAR_OPS[fn];
    if (!t) throw new OnnxExportError(`exportOnnx: scalar_op '${fn}' has no ONNX form`);
    return w.node1(t, [a, b]);
  }

  /** A subgraph from a region: block args are its inputs, yields its outputs (through Identity). */
  private region(b: Block, name: string, argNames: readonly string[], argTypes: ValueInfoProto[], prologue?: () => void): GraphProto {
    const outputs: ValueInfoProto[] = [];
    const nodes = this.w.subgraph(() => {
      b.args.forEach((a, i) => { if (argNames[i] !== '') this.bind(a, argNames[i]); });
      prologue?.();
      this.block(b);
      b.yields.forEach((y, i) => {
        const src = this.names.get(y);
        if (typeof src !== 'string') throw new OnnxExportError(`exportOnnx: region ${name} yields a tuple; ONNX subgraphs yield tensors`);
        const out = this.w.node1('Identity', [src]);
        outputs.push(valueInfo(out, y.type, `yield ${i} of ${name}`, (d) => d));
      });
    });
    return { name, node: nodes, input: argTypes, output: outputs, initializer: [] };
  }

  private ifNode(n: Node): void {
    const w = this.w;
    const c = n.inputs[0]!;
    let cond = this.name(c, n);
    if (elemOf(c.type, 'the if condition') !== 'bool') cond = cast(w, cond, 'bool');
    const thenG = this.region(n.regions[0], w.fresh('then'), [], []);
    const elseG = this.region(n.regions[1], w.fresh('else'), [], []);
    const outs = w.node('If', [cond], n.outputs.length, { then_branch: { graph: thenG }, else_branch: { graph: elseG } });
    n.outputs.forEach((v, i) => this.bind(v, outs[i]));
  }

  /**
   * Kiln loop(maxTrips?, cond?, ...init) with body(i, ...carried) → (continue, ...carried) is
   * ONNX Loop(M, cond, ...init) with body(iter_num: int64, cond_in, ...carried) → (cond_out, ...).
   */
  private loopNode(n: Node, where: string): void {
    const w = this.w;
    const [maxTrips, cond, ...init] = n.inputs;
    const M = maxTrips ? w.node1('Cast', [this.name(maxTrips, n)], { to: ONNX_DTYPE.INT64 }) : '';
    let c = '';
    if (cond) {
      c = this.name(cond, n);
      if (elemOf(cond.type, 'the loop condition') !== 'bool') c = cast(w, c, 'bool');
    }
    const body = n.regions[0];
    const iterName = w.fresh('iter'), condIn = w.fresh('cond_in');
    const carriedNames = body.args.slice(1).map(() => w.fresh('carried'));
    const argTypes = [
      { name: iterName, type: { tensor_type: { elem_type: ONNX_DTYPE.INT64, shape: { dim: [] } } } },
      { name: condIn, type: { tensor_type: { elem_type: ONNX_DTYPE.BOOL, shape: { dim: [] } } } },
      ...body.args.slice(1).map((a, i) => valueInfo(carriedNames[i], a.type, `${where} carried value ${i}`, (d) => d)),
    ];
    const bodyName = w.fresh('loop_body');
    // The Kiln counter is i32: cast ONNX's int64 iteration number inside the body.
    const g = this.region(body, bodyName, ['', ...carriedNames], argTypes,
      () => this.bind(body.args[0], w.node1('Cast', [iterName], { to: ONNX_DTYPE.INT32 })));
    const outs = w.node('Loop', [M, c, ...init.map((v) => this.name(v, n))], n.outputs.length, { body: { graph: g } });
    n.outputs.forEach((v, i) => this.bind(v, outs[i]));
  }
}

/**
 * Exports a Kiln graph (or anything holding one: a traced, scripted or optimized module) as an
 * ONNX model. Writes the file at `path` when given; returns the model's bytes either way.
 *
 * @example
 * const traced = jit.trace(model, [randn([2, 3, 32, 32])], { dynamicAxes: { 0: { 0: 'N' } } });
 * jit.exportOnnx(traced, 'model.onnx', { inputNames: ['input'], dynamicAxes: { input: { 0: 'batch_size' } } });
 */
export function exportOnnx(model: OnnxExportable, path?: string, options: ExportOnnxOptions = {}): Uint8Array {
  const g = model instanceof Graph ? model : model.graph;
  const opset = options.opsetVersion ?? 17;
  if (!Number.isInteger(opset) || opset < 13 || opset > 17) throw new OnnxExportError(`exportOnnx: opsetVersion ${opset} is not supported; use 13 to 17`);
  const inputs = g.inputs.filter((i) => i.kind === 'input');
  const inputNames = options.inputNames ?? inputs.map((i) => i.name);
  const outputNames = options.outputNames ?? g.outputs.map((o) => o.name);
  if (inputNames.length !== inputs.length) throw new OnnxExportError(`exportOnnx: inputNames has ${inputNames.length} name(s), the graph has ${inputs.length} input(s) (${inputs.map((i) => i.name).join(', ')})`);
  if (outputNames.length !== g.outputs.length) throw new OnnxExportError(`exportOnnx: outputNames has ${outputNames.length} name(s), the graph has ${g.outputs.length} output(s) (${g.outputs.map((o) => o.name).join(', ')})`);
  const axes = options.dynamicAxes ?? {};
  for (const k of Object.keys(axes)) {
    if (!inputNames.includes(k) && !outputNames.includes(k)) throw new OnnxExportError(`exportOnnx: dynamicAxes names '${k}', which is neither an input (${inputNames.join(', ')}) nor an output (${outputNames.join(', ')})`);
  }

  // Symbols: where each plain symbol can be read, and its ONNX name (renamed by dynamicAxes).
  const symbols = new Map<string, SymbolSource>();
  const rename = new Map<string, string>();
  inputs.forEach((inp, k) => {
    const t = inp.value.type;
    if (!isTensor(t)) return;
    t.shape.forEach((d, axis) => {
      if (typeof d !== 'string') return;
      if (!symbols.has(d)) symbols.set(d, { tensor: inputNames[k], axis });
      const named = axes[inputNames[k]]?.[axis];
      if (named !== undefined) rename.set(d, named);
    });
  });
  const renameDim = (d: string) => rename.get(d) ?? d;

  const w = new OnnxWriter(opset, symbols);
  const ex = new Exporter(g, w);
  const graphInputs = inputs.map((inp, k) => {
    ex.bind(inp.value, inputNames[k]);
    return valueInfo(inputNames[k], inp.value.type, `input '${inp.name}'`, renameDim, axes[inputNames[k]]);
  });
  for (const p of g.inputs) if (p.kind === 'param') ex.bind(p.value, ex.initializer(p.name, `parameter '${p.name}'`));
  ex.block(g.body);
  const graphOutputs = g.outputs.map((o, k) => {
    const src = ex.name(o.value, new NodeLike(`output '${o.name}'`) as unknown as Node);
    w.node('Identity', [src], [outputNames[k]]);
    return valueInfo(outputNames[k], o.value.type, `output '${o.name}'`, renameDim, axes[outputNames[k]]);
  });
  const modelProto: ModelProtoObject = {
    ir_version: 8,
    opset_import: [{ domain: '', version: opset }],
    producer_name: 'kiln',
    producer_version: '0.1.0',
    graph: { name: g.name, node: w.topNodes, initializer: ex.initializers, input: graphInputs, output: graphOutputs },
  };
  const bytes = encodeModel(modelProto);
  if (path !== undefined) writeFileSync(path, bytes);
  return bytes;
}

/** A stand-in node for error messages about graph outputs. */
class NodeLike { readonly meta = {}; constructor(readonly op: string) {} }
