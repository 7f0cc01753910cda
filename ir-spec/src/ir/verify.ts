// The IR verifier. Invariant: a graph that passes can be typed, printed, saved and run without
// meeting an unknown op, a malformed attribute, a type that disagrees with the op's rule, a
// value used where its definition does not dominate, or a dangling tensor-table name. It is
// table-driven: tensor ops are checked against their registry entries (arity, zod attributes,
// `infer`), structural ops against their entries in builtins.ts (attribute schema, regions,
// optional inputs, typing rule). The
// first problem, in program order, is thrown as a VerifyError printing the node as text.

import * as z from 'zod';
import { DTYPES, type DType } from '../dtype.js';
import { getOp, hasOp } from '../op-def.js';
import { OpError } from '../shape.js';
import { allBuiltins, getBuiltin } from './builtins.js';
import { DimError, isCanonicalDim } from './dims.js';
import { Node, type Attrs, type Block, type Graph, type Value } from './graph.js';
import { inferTypes } from './infer.js';
import { nameValues, printAttrValue, printNode, printType } from './text/index.js';
import { tensorType, typeEquals, type IRType } from './types.js';

/** The first problem the verifier found, with the offending node (or input/output) as text. */
export class VerifyError extends Error {
  /**
   * @param node the place in one line of the text form: a node (`%3 = relu(%2) : f32[N,4]`,
   *   a node with regions ends in `[2 regions]`), a region's `yield %5`, or `input %x: f32[N,4]`,
   *   `param %w: f32[5,4]`, `output y = %3` for graph-level problems.
   * @param problem what is wrong and what to do.
   * @param where the enclosing graph or region, e.g. `region 1 (else) of %5 = if(%4) : f32[N], in graph @main`.
   */
  constructor(readonly node: string, readonly problem: string, readonly where: string) {
    super(`verify: ${problem}\n  at ${node}\n  in ${where}`);
    this.name = 'VerifyError';
  }
}

// ---- the walk ----------------------------------------------------------------------------------

/** Stable text of attributes (keys sorted, -0/NaN/inf distinguished), for equality. */
const attrText = (a: Attrs): string => printAttrValue(a);

/** Why a type is malformed (bad dtype, negative or non-canonical dim), or undefined. */
export function typeProblem(t: IRType): string | undefined {
  switch (t.kind) {
    case 'tensor':
    case 'scalar':
      if (!DTYPES.includes(t.dtype)) return `unknown dtype ${JSON.stringify(t.dtype)}`;
      if (t.kind === 'scalar') return undefined;
      for (let k = 0; k < t.shape.length; k++) {
        const d = t.shape[k];
        if (!isCanonicalDim(d)) {
          return typeof d === 'number'
            ? `dim ${k} is ${d}; sizes are non-negative integers`
            : `dim ${k} '${d}' is not a canonical symbolic dim (see ir/dims.ts: e.g. 'N*64', not '64*N')`;
        }
      }
      return undefined;
    case 'tuple': {
      for (const e of t.elements) {
        const p = typeProblem(e);
        if (p) return p;
      }
      return undefined;
    }
    case 'list': return typeProblem(t.element);
    default: return `unknown type kind ${JSON.stringify((t as { kind: unknown }).kind)}`;
  }
}

const DATA_KIND: Record<DType, { name: string; is: (x: unknown) => boolean }> = {
  float32: { name: 'Float32Array', is: (x) => x instanceof Float32Array },
  // float16/bfloat16 values live widened in a Float32Array (dtype.ts).
  float16: { name: 'Float32Array', is: (x) => x instanceof Float32Array },
  bfloat16: { name: 'Float32Array', is: (x) => x instanceof Float32Array },
  int32: { name: 'Int32Array', is: (x) => x instanceof Int32Array },
  bool: { name: 'Uint8Array', is: (x) => x instanceof Uint8Array },
  int8: { name: 'Int8Array', is: (x) => x instanceof Int8Array },
};

/** The declared name of a tensor op's input `i` (`x`, `bias?`, `...xs`). */
function inputName(op: string, i: number): string | undefined {
  const names = getOp(op).inputs;
  return names.length === 1 && names[0].startsWith('...') ? names[0] : names[i];
}

export interface VerifyOptions {
  /**
   * Every tensor-op node was built from `inferTypes` (its attrs are the parsed attrs, its output
   * types the inferred types), as the `.tsgraph` decoder builds them: the verifier skips
   * re-typing those nodes and checks everything else (default false).
   */
  readonly typesInferred?: boolean;
}

class Verifier {
  /**
   * Every value defined so far: true while visible here, false once the region that defined it
   * closed (for "defined twice" and "not visible here"); one probe per use whatever the nesting.
   */
  private readonly defined = new Map<Value, boolean>();
  /** The values each open region defined, innermost last (the top level's are never hidden). */
  private readonly inner: Value[][] = [];
  private names?: ReadonlyMap<Value, string>;

  constructor(private readonly g: Graph, private readonly opts: VerifyOptions) {}

  run(): void {
    const g = this.g;
    const top = `graph @${g.name}`;
    this.graphInputs(top);
    if (g.body.args.length || g.body.yields.length) {
      this.fail(`graph @${g.name}`, 'the graph body must have no block arguments and no yields (graph inputs and outputs name those values)', top);
    }
    this.block(g.body, top);
    this.graphOutputs(top);
  }

  private graphInputs(top: string): void {
    const g = this.g;
    const seen = new Map<string, number>();
    g.inputs.forEach((inp, i) => {
      const at = () => `${inp.kind === 'param' ? 'param' : 'input'} ${this.ref(inp.value)}: ${printType(inp.value.type)}`;
      if (typeof inp.name !== 'string' || inp.name === '') this.fail(at(), `input ${i} has an empty name; every input needs a unique name`, top);
      const dup = seen.get(inp.name);
      if (dup !== undefined) this.fail(at(), `duplicate input name '${inp.name}' (inputs ${dup} and ${i}); rename one`, top);
      seen.set(inp.name, i);
      if (inp.kind !== 'input' && inp.kind !== 'param') this.fail(at(), `input '${inp.name}' has kind ${JSON.stringify(inp.kind)}; expected 'input' or 'param'`, top);
      const p = typeProblem(inp.value.type);
      if (p) this.fail(at(), `input '${inp.name}': ${p}`, top);
      if (inp.kind === 'param') {
        const t = g.tensors.get(inp.name);
        if (!t) this.fail(at(), `param '${inp.name}' has no tensor of that name in the graph's tensor table; add the tensor or make it a plain input`, top);
        this.tensorData(inp.name, at, top);
        const want = tensorType(t.dtype, t.shape);
        if (!typeEquals(want, inp.value.type)) {
          this.fail(at(), `param '${inp.name}' is declared ${printType(inp.value.type)} but its tensor in the table is ${printType(want)}`, top);
        }
      }
      this.define(inp.value, at, top);
    });
  }

  private graphOutputs(top: string): void {
    const seen = new Set<string>();
    for (const out of this.g.outputs) {
      const at = () => `output ${out.name} = ${this.ref(out.value)}`;
      if (typeof out.name !== 'string' || out.name === '') this.fail(at(), 'an output has an empty name; every output needs a unique name', top);
      if (seen.has(out.name)) this.fail(at(), `duplicate output name '${out.name}'; rename one`, top);
      seen.add(out.name);
      if (!this.visible(out.value)) this.fail(at(), `output '${out.name}' ${this.whyInvisible(out.value)}`, top);
    }
  }

  /** Checks a table tensor's dtype, shape and data length. */
  private tensorData(name: string, at: () => string, where: string): void {
    const t = this.g.tensors.get(name)!;
    if (!DTYPES.includes(t.dtype)) this.fail(at(), `tensor '${name}' has unknown dtype ${JSON.stringify(t.dtype)}`, where);
    if (!t.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) this.fail(at(), `tensor '${name}' has shape [${t.shape.join(',')}]; stored tensors need concrete non-negative sizes`, where);
    const n = t.shape.reduce((a, d) => a * d, 1);
    const kind = DATA_KIND[t.dtype];
    if (!kind.is(t.data)) {
      const got = (t.data as unknown as { constructor?: { name?: string } } | null)?.constructor?.name ?? typeof t.data;
      this.fail(at(), `tensor '${name}' (${t.dtype}) holds ${got} data; ${t.dtype} data must be a ${kind.name}`, where);
    }
    if (t.data.length !== n) this.fail(at(), `tensor '${name}' has shape [${t.shape.join(',')}] (${n} elements) but ${t.data.length} data elements`, where);
  }

  private block(b: Block, where: string): void {
    for (const n of b.nodes) this.node(n, where);
  }

  private node(n: Node, where: string): void {
    const at = () => this.nodeText(n);
    const rule = getBuiltin(n.op);
    if (!rule && !hasOp(n.op)) {
      this.fail(at(), `unknown op '${n.op}': not in the op registry and not a structural op (${allBuiltins().map((b) => b.name).join(', ')}); check the spelling or register the op`, where);
    }
    const regions = rule ? rule.regions : getOp(n.op).elementBody ? 1 : 0;
    if (n.regions.length !== regions) {
      this.fail(at(), `${n.op} takes ${regions} region(s), got ${n.regions.length}`, where);
    }

    // Inputs: omitted only where optional, otherwise visible here.
    const optional = (i: number) => (rule ? rule.optional?.includes(i) ?? false : inputName(n.op, i)?.endsWith('?') ?? false);
    for (let i = 0; i < n.inputs.length; i++) {
      const v = n.inputs[i];
      if (v === null) {
        if (!optional(i)) this.fail(at(), `input ${i}${rule ? '' : ` ('${inputName(n.op, i) ?? 'beyond the last'}')`} is omitted but is not optional`, where);
      } else if (!this.visible(v)) this.fail(at(), `input ${i} (${this.ref(v)}) ${this.whyInvisible(v)}`, where);
    }

    // Structural attributes against their schema (tensor ops' attributes are parsed by inferTypes).
    if (rule) this.checkAttrs(n, rule.attrs.safeParse(n.attrs), where);

    // Regions: arguments are fresh definitions visible inside; yields must be visible there.
    n.regions.forEach((r, k) => {
      const name = rule ? rule.regionNames?.[k] : 'body';
      const rw = `region ${k}${name ? ` (${name})` : ''} of ${at()}, in ${where}`;
      this.inner.push([]);
      r.args.forEach((a, j) => {
        const p = typeProblem(a.type);
        if (p) this.fail(at(), `argument ${j} of region ${k}: ${p}`, where);
        this.define(a, at, where);
      });
      this.block(r, rw);
      r.yields.forEach((v, j) => {
        if (!this.visible(v)) this.fail(`yield ${r.yields.map((y) => this.ref(y)).join(', ')}`, `yielded value ${j} (${this.ref(v)}) ${this.whyInvisible(v)}`, rw);
      });
      for (const v of this.inner.pop()!) this.defined.set(v, false);
    });

    // Types: the op's rule (with the parsed attributes) must give exactly the stored results.
    // A tensor op's node that its maker typed with that rule (opts.typesInferred) is not
    // re-typed: inferTypes would parse its attributes and shapes a second time.
    if (rule || !this.opts.typesInferred) {
      let inferred: { attrs: Attrs; types: IRType[] };
      try {
        inferred = inferTypes(n.op, n.inputs.map((v) => v?.type ?? null), n.attrs, { tensors: this.g.tensors }, n.regions);
      } catch (e) {
        if (!(e instanceof OpError) && !(e instanceof DimError)) throw e;
        this.fail(at(), e.message, where);
      }
      if (!rule) {
        const parsed = attrText(inferred.attrs), stored = attrText(n.attrs);
        if (parsed !== stored) {
          this.fail(at(), `attributes ${stored} are not in parsed form ${parsed} (defaults filled in); build nodes with GraphBuilder or store parseOpAttrs(op, attrs)`, where);
        }
      }
      if (inferred.types.length !== n.outputs.length) {
        this.fail(at(), `${n.op} gives ${inferred.types.length} result(s) but the node has ${n.outputs.length}`, where);
      }
      inferred.types.forEach((t, i) => {
        const have = n.outputs[i].type;
        if (!typeEquals(t, have)) this.fail(at(), `result ${i} is typed ${printType(have)} but ${n.op} gives ${printType(t)} for these inputs`, where);
      });
    }
    if (n.op === 'constant' && typeof n.attrs.name === 'string') this.tensorData(n.attrs.name, at, where);
    for (const o of n.outputs) this.define(o, at, where);
  }

  private checkAttrs(n: Node, r: { success: true; data: unknown } | { success: false; error: z.ZodError }, where: string): void {
    if (!r.success) {
      const issue = r.error.issues[0];
      const key = issue.path.length ? `attribute '${issue.path.join('.')}'` : 'attributes';
      this.fail(this.nodeText(n), `invalid ${key} of ${n.op}: ${issue.message} (got ${attrText(n.attrs)})`, where);
    }
    const parsed = attrText(r.data as Attrs), stored = attrText(n.attrs);
    if (parsed !== stored) this.fail(this.nodeText(n), `attributes ${stored} are not in parsed form ${parsed}`, where);
  }

  /** `at` prints the place, called only for an error (printing every node would cost more than the walk). */
  private define(v: Value, at: () => string, where: string): void {
    if (this.defined.has(v)) this.fail(at(), `${this.ref(v)} is defined twice; every value is defined exactly once (SSA)`, where);
    this.defined.set(v, true);
    if (this.inner.length) this.inner[this.inner.length - 1].push(v);
  }

  private visible(v: Value): boolean {
    return this.defined.get(v) === true;
  }

  /** Why a use of `v` is not dominated by its definition. */
  private whyInvisible(v: Value): string {
    if (this.defined.get(v) === false) return 'is defined inside a region that does not enclose this use (values leave a region only through its yields)';
    return this.allDefinitions().has(v)
      ? 'is used before its definition (or by the node that defines it); move the use after it'
      : 'is not defined anywhere in the graph (a graph input, node result or region argument)';
  }

  private allDefinitions(): Set<Value> {
    const all = new Set<Value>(this.g.inputs.map((i) => i.value));
    const visit = (b: Block) => {
      b.args.forEach((a) => all.add(a));
      for (const n of b.nodes) {
        n.outputs.forEach((o) => all.add(o));
        n.regions.forEach(visit);
      }
    };
    visit(this.g.body);
    return all;
  }

  private ref(v: Value): string {
    this.names ??= nameValues(this.g);
    const n = this.names.get(v);
    return n === undefined ? '%<undefined>' : `%${n}`;
  }

  /** The node on one line: its regions are left out (the message says which region is meant). */
  private nodeText(n: Node): string {
    this.names ??= nameValues(this.g);
    const line = printNode(new Node(n.op, n.inputs, n.attrs, n.outputs, [], n.meta), this.names);
    return n.regions.length ? `${line}  [${n.regions.length} region${n.regions.length > 1 ? 's' : ''}]` : line;
  }

  private fail(at: string, problem: string, where: string): never {
    throw new VerifyError(at, problem, where);
  }
}

/**
 * Checks a whole graph and throws a VerifyError for the first problem, in program order:
 * unknown ops; arity and omitted inputs; attributes against the op's schema and in parsed
 * form (defaults filled in); result counts and types against the op's typing rule; SSA (each
 * value defined once, every use dominated by its definition); region shapes (if: then/else
 * without arguments; loop: body(i: i32, ...carried) yielding (continue: bool, ...carried));
 * graph inputs (unique names, canonical types, params backed by the tensor table) and outputs
 * (unique names, defined at the top level); tensor-table data matching dtype and shape.
 *
 * @example
 * ```ts
 * const b = new GraphBuilder('f');
 * b.output('y', b.op1('relu', [b.input('x', tensorType('float32', ['N', 4]))]));
 * verifyGraph(b.build()); // passes
 * ```
 */
export function verifyGraph(g: Graph, opts: VerifyOptions = {}): void {
  new Verifier(g, opts).run();
}
