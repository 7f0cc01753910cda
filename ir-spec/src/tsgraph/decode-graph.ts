// The header's graph JSON → a Graph. Invariant: the Graph returned is well formed as far as
// the file can make it so — every op known, every value defined once and used only where
// visible, every node re-typed by `inferTypes` (the same rules the builder and the verifier
// use) with the file's declared types required to agree, params bound to tensors of their
// type, and the header's signature matching the graph. The file's types are never trusted alone.

import { MEMORY_PLAN_KEY, memoryPlanSchema } from './memory-plan.js';
import { hasOp } from '../op-def.js';
import { programToBody } from '../ops/fused.js';
import { OpError } from '../shape.js';
import { isBuiltin } from '../ir/builtins.js';
import { DimError } from '../ir/dims.js';
import { Block, Graph, Node, Value, type Attrs, type GraphInput, type GraphOutput, type NodeMeta, type TensorData } from '../ir/graph.js';
import { inferTypes } from '../ir/infer.js';
import { typeEquals, typeToString, type IRType } from '../ir/types.js';
import { TsgraphError } from './errors.js';
import type { BlockJson, NodeJson, SignatureJson, TsgraphHeader, ValueJson } from './format.js';
import { decodeAttrs, JsonValueError } from './json.js';
import { describeNode } from './describe.js';
import { Scopes } from './scopes.js';
import { parseTypeString } from './type-string.js';

const FIX = 're-export the model with `jit.save` / `kiln compile`, or report a bug if this Kiln wrote the file';

/** Shared by every node without regions or meta (both are read-only): one object each, not one per node. */
const NO_REGIONS: readonly Block[] = Object.freeze([]);
const NO_META: NodeMeta = Object.freeze({});

/** typeEquals, without printing both types when they are tensors of one dtype and the same dims (nearly every node). */
function sameType(a: IRType, b: IRType): boolean {
  if (a.kind === 'tensor' && b.kind === 'tensor' && a.dtype === b.dtype && a.shape.length === b.shape.length) {
    let same = true;
    for (let i = 0; i < a.shape.length && same; i++) same = a.shape[i] === b.shape[i];
    if (same) return true;
  }
  return typeEquals(a, b);
}

/** A node's meta as the Graph holds it: only the fields the file sets. */
function nodeMeta(mj: NodeJson['meta']): NodeMeta {
  if (mj === undefined || (mj.fused === undefined && mj.scope === undefined && mj.loc === undefined)) return NO_META;
  const meta: { scope?: string; loc?: string; fused?: NodeMeta['fused'] } = {};
  if (mj.fused !== undefined) meta.fused = mj.fused;
  if (mj.scope !== undefined) meta.scope = mj.scope;
  if (mj.loc !== undefined) meta.loc = mj.loc;
  return meta;
}

const verifyError = (msg: string, cause?: unknown) => new TsgraphError('VERIFY', `${msg}; ${FIX}`, cause === undefined ? undefined : { cause });

/** Rebuilds and checks the graph of a header whose schema and tensor table are already checked. */
export function rebuildGraph(header: TsgraphHeader, tensors: ReadonlyMap<string, TensorData>): Graph {
  const g = header.graph;
  const scopes = new Scopes<number, Value>();
  const ctx = { tensors };
  // Declared output types, parsed once per distinct string; only compared, never stored.
  const declaredTypes = new Map<string, IRType>();
  const declaredType = (s: string): IRType => {
    let t = declaredTypes.get(s);
    if (!t) declaredTypes.set(s, t = parseTypeString(s));
    return t;
  };

  // Places (`where`) are thunks: a message is printed only when it is thrown, so decoding costs
  // no string building per node.
  const define = (vj: ValueJson, type: IRType, where: () => string): Value => {
    const v = new Value(type, vj.hint);
    if (!scopes.define(vj.id, v)) throw verifyError(`${where()} defines %${vj.id}, which is already defined (SSA values are defined once)`);
    return v;
  };
  const undefinedUse = (id: number, where: () => string): TsgraphError => {
    const why = scopes.wasDefined(id) ? 'is defined inside a region and not visible here' : 'is not defined before it';
    return verifyError(`${where()} uses %${id}, which ${why} (a value must be defined earlier in the same block or an enclosing one)`);
  };
  const use = (id: number, where: () => string): Value => {
    const v = scopes.lookup(id);
    if (!v) throw undefinedUse(id, where);
    return v;
  };

  // A node's place is its block's path and its index: the text is made only for an error, so
  // decoding a node allocates no closure, and no array beyond the ones the Node keeps.
  const decodeNode = (nj: NodeJson, blockPath: () => string, index: number): Node => {
    const path = () => `${blockPath()}[${index}]`;
    const desc = () => `node ${describeNode(nj.op, nj.inputs, nj.outputs.map((o) => o.id), nj.attrs)} at ${path()}`;
    if (!isBuiltin(nj.op) && !hasOp(nj.op)) {
      throw new TsgraphError('UNKNOWN_OP', `${desc()} uses op '${nj.op}', which this Kiln does not know: upgrade Kiln to the version that wrote the file (producer '${header.producer.name}' ${header.producer.version}), or re-export the model without that op`);
    }
    const nIn = nj.inputs.length;
    const inputs = new Array<Value | null>(nIn), inputTypes = new Array<IRType | null>(nIn);
    for (let i = 0; i < nIn; i++) {
      const id = nj.inputs[i];
      const v = id === null ? null : scopes.lookup(id);
      if (v === undefined) throw undefinedUse(id as number, desc);
      inputs[i] = v;
      inputTypes[i] = v === null ? null : v.type;
    }
    let regions = nj.regions?.length ? nj.regions.map((r, i) => decodeBlock(r, () => `${path()}.regions[${i}]`)) : NO_REGIONS as Block[];
    let attrs;
    try {
      attrs = decodeAttrs(nj.attrs, () => `${path()}.attrs`);
    } catch (e) {
      if (e instanceof JsonValueError) throw new TsgraphError('SCHEMA', `header field ${e.message}; ${FIX}`, { cause: e });
      throw e;
    }
    let inferred;
    try {
      if (nj.op === 'fused_elementwise') ({ attrs, regions } = upgradeLegacy(attrs, regions, nIn));
      inferred = inferTypes(nj.op, inputTypes, attrs, ctx, regions);
    } catch (e) {
      if (e instanceof OpError) throw verifyError(`${desc()}: ${e.message}`, e);
      // Symbolic-dim arithmetic (ir/dims.ts) signals an overflow with a RangeError and a malformed
      // dim with a DimError; from a file, both mean types no valid graph has.
      if (e instanceof RangeError || e instanceof DimError) throw verifyError(`${desc()}: its shapes cannot be computed (${e.message})`, e);
      throw e;
    }
    const nOut = nj.outputs.length;
    if (inferred.types.length !== nOut) {
      throw verifyError(`${desc()} declares ${nOut} output(s) but op '${nj.op}' gives ${inferred.types.length}`);
    }
    const outputs = new Array<Value>(nOut);
    for (let i = 0; i < nOut; i++) {
      const o = nj.outputs[i];
      const declared = declaredType(o.type);
      if (!sameType(declared, inferred.types[i])) {
        throw verifyError(`${desc()}: output ${i} (%${o.id}) is declared ${o.type} but the op gives ${typeToString(inferred.types[i])}`);
      }
      // The declared type equals the inferred one: values of one type share its parsed object
      // (types are immutable), so a long graph keeps one type object per distinct type.
      outputs[i] = define(o, declared, desc);
    }
    return new Node(nj.op, inputs, inferred.attrs, outputs, regions.length ? regions : NO_REGIONS, nodeMeta(nj.meta));
  };

  const decodeNodes = (nodes: readonly NodeJson[], path: () => string): Node[] => {
    const out = new Array<Node>(nodes.length);
    for (let i = 0; i < nodes.length; i++) out[i] = decodeNode(nodes[i], path, i);
    return out;
  };

  const decodeBlock = (bj: BlockJson, path: () => string): Block => {
    scopes.push();
    try {
      const args = bj.args.map((a, i) => define(a, parseTypeString(a.type), () => `region ${path()} argument ${i}`));
      const nodes = decodeNodes(bj.nodes, () => `${path()}.nodes`);
      const yields = bj.yields.map((id, i) => use(id, () => `region ${path()} yield ${i}`));
      return new Block(args, nodes, yields);
    } finally {
      scopes.pop();
    }
  };

  const names = new Set<string>();
  const inputs: GraphInput[] = g.inputs.map((ij, i) => {
    const where = `graph ${ij.kind} '${ij.name}' (graph.inputs[${i}])`;
    if (names.has(ij.name)) throw verifyError(`${where}: the name is used twice`);
    names.add(ij.name);
    const type = parseTypeString(ij.type);
    if (ij.kind === 'param') {
      const t = tensors.get(ij.name);
      if (!t) throw verifyError(`${where} is a param but the tensor table has no tensor '${ij.name}'`);
      const stored = `${typeToString({ kind: 'tensor', dtype: t.dtype, shape: t.shape })}`;
      if (stored !== typeToString(type)) throw verifyError(`${where} is declared ${ij.type} but its tensor is ${stored}`);
    }
    return { name: ij.name, kind: ij.kind, value: define(ij, type, () => where) };
  });
  const body = new Block([], decodeNodes(g.nodes, () => 'graph.nodes'), []);
  const outNames = new Set<string>();
  const outputs: GraphOutput[] = g.outputs.map((oj, i) => {
    const where = `graph output '${oj.name}' (graph.outputs[${i}])`;
    if (outNames.has(oj.name)) throw verifyError(`${where}: the name is used twice`);
    outNames.add(oj.name);
    return { name: oj.name, value: use(oj.id, () => where) };
  });
  checkSignature('inputs', header.inputs, inputs.filter((i) => i.kind === 'input'));
  checkSignature('outputs', header.outputs, outputs);
  const plan = memoryPlanSchema.safeParse(header.plan);
  const metadata = plan.success ? { ...header.metadata, [MEMORY_PLAN_KEY]: JSON.stringify(plan.data) } : { ...header.metadata };
  return new Graph(g.name, inputs, body, outputs, tensors, metadata);
}

/**
 * A node as this Kiln spells it: a fused_elementwise of a file written before issue 13 kept its
 * body as a `program` attribute, which becomes its element body region (programToBody).
 */
function upgradeLegacy(attrs: Attrs, regions: Block[], nInputs: number): { attrs: Attrs; regions: Block[] } {
  if (regions.length || !Object.hasOwn(attrs, 'program')) return { attrs, regions };
  const { program, ...rest } = attrs;
  return { attrs: rest, regions: [programToBody(program, nInputs)] };
}

/** The header's top-level `inputs`/`outputs` must describe the graph exactly (tools read only them). */
function checkSignature(field: 'inputs' | 'outputs', sig: readonly SignatureJson[], actual: readonly { name: string; value: Value }[]): void {
  if (sig.length !== actual.length) {
    throw verifyError(`header field ${field} lists ${sig.length} entries but the graph has ${actual.length} run-time ${field}`);
  }
  sig.forEach((s, i) => {
    const a = actual[i];
    if (s.name !== a.name || !typeEquals(parseTypeString(s.type), a.value.type)) {
      throw verifyError(`header field ${field}[${i}] says ${s.name}: ${s.type} but the graph has ${a.name}: ${typeToString(a.value.type)}`);
    }
  });
}
