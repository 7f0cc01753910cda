// The parser of the IR text form: recursive descent over lexer.ts, grammar in ir-spec/SPEC.md.
// Invariants: it never trusts a written type — every node is re-typed with `inferTypes` (the
// rules the builder and the verifier use) and a written result type must agree; a value is
// visible only after its definition in its own block or an enclosing one (dominance), and each
// name is defined once in the whole text; every failure is an IRParseError at a line:col.

import { hasOp } from '../../op-def.js';
import { isBuiltin } from '../builtins.js';
import { Block, Graph, Node, Value, type AttrValue, type Attrs, type GraphInput, type GraphOutput, type NodeMeta, type TensorData } from '../graph.js';
import { inferTypes } from '../infer.js';
import { DTYPE_FROM_SHORT, listType, scalarType, tensorType, tupleType, type IRType } from '../types.js';
import type { Dim } from '../../shape.js';
import { INT_RE, printType, printValueName } from './format.js';
import { describe, Lexer, type Token } from './lexer.js';
import { lineCol } from './errors.js';
import { suggestOp } from './suggest.js';

export interface ParseOptions {
  /**
   * The tensor table to attach (params and `constant {name}` refer to it by name). With it,
   * every param and named constant must be present with the written type; without it, their
   * types come from the text and the graph's tensor table is empty.
   */
  readonly tensors?: ReadonlyMap<string, TensorData>;
}

/**
 * Reads a graph from its text form (see ir-spec/SPEC.md); `printGraph` of the result prints
 * `text` back when `text` came from `printGraph`.
 *
 * @throws IRParseError with line:col and a caret frame, naming what was expected.
 * @example
 * const g = parseGraph(`graph @f(%x: f32[N,4]) -> (y: f32[N,4]) {
 *   %0 = relu(%x) : f32[N,4]
 *   return y=%0
 * }`);
 * g.body.nodes[0].op; // 'relu'
 */
export function parseGraph(text: string, opts: ParseOptions = {}): Graph {
  return new Parser(text, opts.tensors).graph();
}

/** Deepest nesting of regions, types and attribute values the parser accepts. */
const MAX_DEPTH = 200;

class Parser {
  private readonly lex: Lexer;
  /** Visible values, innermost block last. */
  private readonly scopes: Map<string, Value>[] = [];
  /** Every name defined so far, with the offset of its definition. */
  private readonly defined = new Map<string, number>();
  private readonly ctx: { tensors: ReadonlyMap<string, TensorData> };
  private depth = 0;

  constructor(text: string, private readonly tensors: ReadonlyMap<string, TensorData> | undefined) {
    this.lex = new Lexer(text);
    this.ctx = { tensors: tensors ?? new Map() };
  }

  graph(): Graph {
    const lex = this.lex;
    lex.expect('graph', "at the start of a graph (a graph's text begins with 'graph @name(')");
    const nameTok = lex.next();
    if (nameTok.kind !== 'global') throw lex.error(`expected the graph name (such as @main) after 'graph', found ${describe(nameTok)}`, nameTok.start);
    lex.expect('(', 'after the graph name');
    this.scopes.push(new Map());
    const inputs: GraphInput[] = [];
    if (!lex.eat(')')) {
      do inputs.push(this.graphInput()); while (lex.eat(','));
      lex.expect(')', "after the graph's inputs (inputs are separated by ',')");
    }
    lex.expect('->', "after the graph's inputs");
    lex.expect('(', "before the graph's output signature");
    const signature: { name: string; type: IRType; start: number }[] = [];
    if (!lex.eat(')')) {
      do {
        const { name, start } = this.word('an output name');
        lex.expect(':', `after output name '${name}'`);
        signature.push({ name, type: this.type(), start });
      } while (lex.eat(','));
      lex.expect(')', "after the graph's outputs (outputs are separated by ',')");
    }
    let metadata: Record<string, string> = {};
    if (lex.eat('metadata')) metadata = this.metadata();
    lex.expect('{', "before the graph's body");
    const body = new Block([]);
    this.statements(body, 'return');
    const outputs = this.returnList(signature);
    lex.expect('}', "after 'return' (it is the last statement of the graph)");
    const end = lex.peek();
    if (end.kind !== 'eof') throw lex.error(`expected the end of the text after the graph's closing '}', found ${describe(end)}`, end.start);
    return new Graph(nameTok.value as string, inputs, body, outputs, new Map(this.tensors ?? []), metadata);
  }

  private graphInput(): GraphInput {
    const lex = this.lex;
    const kind = lex.eat('param') ? 'param' : 'input';
    const tok = lex.next();
    if (tok.kind !== 'value') throw lex.error(`expected an input such as %x: f32[N,3] or param %w: f32[4,3], found ${describe(tok)}`, tok.start);
    const name = tok.value as string;
    lex.expect(':', `after input ${tok.text}`);
    const typeStart = lex.peek().start;
    const type = this.type();
    if (kind === 'param' && this.tensors) {
      const t = this.tensors.get(name);
      if (!t) throw lex.error(`param ${tok.text} has no tensor named '${name}' in the tensors passed to parseGraph`, tok.start);
      const actual = printType(tensorType(t.dtype, t.shape));
      if (actual !== printType(type)) throw lex.error(`param ${tok.text} is written as ${printType(type)} but its tensor is ${actual}`, typeStart);
    }
    const value = new Value(type, name);
    this.define(name, value, tok);
    return { name, kind, value };
  }

  private metadata(): Record<string, string> {
    const start = this.lex.peek().start;
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(this.attrDict())) {
      if (typeof v !== 'string') throw this.lex.error(`metadata value '${k}' must be a string, got ${JSON.stringify(v)}`, start);
      setOwn(out, k, v);
    }
    return out;
  }

  /** `return name=%v, ...` checked against the signature `-> (name: type, ...)`. */
  private returnList(signature: readonly { name: string; type: IRType; start: number }[]): GraphOutput[] {
    const lex = this.lex;
    const retTok = lex.expect('return', 'to end the graph');
    const outputs: GraphOutput[] = [];
    if (lex.peek().text !== '}' || lex.peek().kind !== 'punct') {
      do {
        const { name, start } = this.word('an output name');
        lex.expect('=', `after output name '${name}' (write return ${name}=%value)`);
        const i = outputs.length;
        const sig = signature[i];
        if (!sig) throw lex.error(`'return' has more outputs than the signature declares (${signature.length})`, start);
        if (sig.name !== name) throw lex.error(`output ${i} is '${name}' here but '${sig.name}' in the signature`, start);
        const valueTok = lex.peek();
        const value = this.use();
        if (printType(value.type) !== printType(sig.type)) {
          throw lex.error(`output '${name}' is ${printType(value.type)} (${valueTok.text}) but the signature declares ${printType(sig.type)}`, valueTok.start);
        }
        outputs.push({ name, value });
      } while (lex.eat(','));
    }
    if (outputs.length !== signature.length) throw lex.error(`'return' gives ${outputs.length} output(s) but the signature declares ${signature.length}`, retTok.start);
    return outputs;
  }

  /** Statements until the terminator keyword (`return` or `yield`), which is left unread. */
  private statements(block: Block, terminator: 'return' | 'yield'): void {
    for (;;) {
      const t = this.lex.peek();
      if (t.kind === 'ident' && t.text === terminator) return;
      if (t.kind === 'eof' || (t.kind === 'punct' && t.text === '}')) {
        throw this.lex.error(`expected a node or '${terminator}', found ${describe(t)} (a ${terminator === 'return' ? 'graph' : 'region'} ends with '${terminator}')`, t.start);
      }
      block.nodes.push(this.node());
    }
  }

  /** `%a, %b = op(%x, none) {attrs} ({region}, ...) : T, U  // scope @ loc` */
  private node(): Node {
    const lex = this.lex;
    const resultToks: Token[] = [];
    if (lex.peek().kind === 'value') {
      do {
        const t = lex.next();
        if (t.kind !== 'value') throw lex.error(`expected a result name such as %0, found ${describe(t)}`, t.start);
        resultToks.push(t);
      } while (lex.eat(','));
      lex.expect('=', 'after the result names of a node');
    }
    const opTok = lex.next();
    if (opTok.kind !== 'ident' && opTok.kind !== 'string') throw lex.error(`expected an op name, found ${describe(opTok)}`, opTok.start);
    const op = String(opTok.value);
    const label = `${resultToks.map((t) => t.text).join(', ')}${resultToks.length ? ' = ' : ''}${op}`;
    if (!hasOp(op) && !isBuiltin(op)) throw lex.error(`unknown op '${op}': it is not in the op registry nor a structural op${suggestOp(op)}`, opTok.start);

    lex.expect('(', `after op name '${op}' (inputs are written op(%a, %b, none))`);
    const inputs: (Value | null)[] = [];
    if (!lex.eat(')')) {
      do inputs.push(lex.eat('none') ? null : this.use()); while (lex.eat(','));
      lex.expect(')', `after the inputs of ${label} (inputs are separated by ',')`);
    }
    const attrsTok = lex.peek();
    const attrs = attrsTok.kind === 'punct' && attrsTok.text === '{' ? this.attrDict() : {};
    const regions: Block[] = [];
    if (lex.eat('(')) {
      do regions.push(this.region()); while (lex.eat(','));
      lex.expect(')', `after the regions of ${label}`);
    }
    const written: { type: IRType; start: number }[] = [];
    if (lex.eat(':')) {
      do {
        const start = lex.peek().start;
        written.push({ type: this.type(), start });
      } while (lex.eat(','));
    }
    const meta = this.meta();

    const types = this.typeNode(op, opTok, label, inputs, attrs, regions, written);
    if (types.types.length !== resultToks.length) {
      const at = resultToks[0]?.start ?? opTok.start;
      throw lex.error(`${label}: ${op} has ${types.types.length} result(s) but the text names ${resultToks.length}`, at);
    }
    if (written.length && written.length !== resultToks.length) {
      throw lex.error(`${label}: ${resultToks.length} result(s) but ${written.length} written type(s)`, written[0].start);
    }
    written.forEach((w, i) => {
      const inferred = printType(types.types[i]);
      if (printType(w.type) !== inferred) {
        throw lex.error(`${label}: result ${resultToks[i].text} is written as ${printType(w.type)} but ${op} infers ${inferred} from its inputs and attributes; fix the written type or the node`, w.start);
      }
    });
    const outputs = types.types.map((t) => new Value(t));
    outputs.forEach((v, i) => this.define(resultToks[i].value as string, v, resultToks[i]));
    return new Node(op, inputs, types.attrs, outputs, regions, meta);
  }

  /** Result types and stored attributes, from the op's rule (written types only for tableless constants). */
  private typeNode(
    op: string, opTok: Token, label: string, inputs: readonly (Value | null)[], attrs: Attrs, regions: readonly Block[],
    written: readonly { type: IRType; start: number }[],
  ): { attrs: Attrs; types: IRType[] } {
    const lex = this.lex;
    if (op === 'constant' && typeof attrs.name === 'string' && !this.ctx.tensors.has(attrs.name)) {
      if (this.tensors) throw lex.error(`${label}: no tensor named '${attrs.name}' in the tensors passed to parseGraph`, opTok.start);
      const t = written[0]?.type;
      if (inputs.length || written.length !== 1 || !t || t.kind !== 'tensor') {
        throw lex.error(`${label}: without a tensor table, constant {name="${attrs.name}"} takes no inputs and needs its tensor type written (: f32[...])`, opTok.start);
      }
      return { attrs, types: [t] };
    }
    try {
      return inferTypes(op, inputs.map((v) => v?.type ?? null), attrs, this.ctx, regions);
    } catch (e) {
      if (e instanceof Error) throw lex.error(`${label}: ${e.message}`, opTok.start);
      throw e;
    }
  }

  /** `{ ^(%i: i32, %a: T): nodes... yield %c, %a2 }`, in a new scope. */
  private region(): Block { return this.nested(() => this.regionBody()); }

  private regionBody(): Block {
    const lex = this.lex;
    lex.expect('{', "to open a region (regions are written ({ ... }, { ... }))");
    const scope = new Map<string, Value>();
    this.scopes.push(scope);
    const args: Value[] = [];
    if (lex.eat('^')) {
      lex.expect('(', "after '^' (block arguments are written ^(%i: i32, %a: f32[N]):)");
      if (!lex.eat(')')) {
        do {
          const tok = lex.next();
          if (tok.kind !== 'value') throw lex.error(`expected a block argument such as %i: i32, found ${describe(tok)}`, tok.start);
          lex.expect(':', `after block argument ${tok.text}`);
          const name = tok.value as string;
          const v = new Value(this.type(), INT_RE.test(name) ? undefined : name);
          this.define(name, v, tok);
          args.push(v);
        } while (lex.eat(','));
        lex.expect(')', 'after the block arguments');
      }
      lex.expect(':', "after the block arguments' ')'");
    }
    const block = new Block(args);
    this.statements(block, 'yield');
    lex.next();
    const yields: Value[] = [];
    const after = lex.peek();
    if (!(after.kind === 'punct' && after.text === '}')) {
      do yields.push(this.use()); while (lex.eat(','));
    }
    lex.expect('}', "after 'yield' (it is the last statement of a region)");
    block.yields = yields;
    this.scopes.pop();
    return block;
  }

  /** Runs a recursive rule, refusing text nested deeper than MAX_DEPTH (no stack overflow). */
  private nested<T>(fn: () => T): T {
    if (++this.depth > MAX_DEPTH) {
      const t = this.lex.peek();
      throw this.lex.error(`nested deeper than ${MAX_DEPTH} levels (regions, types or attribute lists)`, t.start);
    }
    try {
      return fn();
    } finally {
      this.depth--;
    }
  }

  /** A use of a value: `%name`, visible from here. */
  private use(): Value {
    const tok = this.lex.next();
    if (tok.kind !== 'value') throw this.lex.error(`expected a value such as %0 or %x, found ${describe(tok)}`, tok.start);
    const name = tok.value as string;
    for (let i = this.scopes.length - 1; i >= 0; i--) {
      const v = this.scopes[i].get(name);
      if (v) return v;
    }
    const at = this.defined.get(name);
    if (at !== undefined) {
      const { line, col } = lineCol(this.lex.text, at);
      throw this.lex.error(`value ${tok.text} is not visible here: it is defined at ${line}:${col} inside a region that does not enclose this use (a region sees only values defined before it in enclosing blocks)`, tok.start);
    }
    throw this.lex.error(`undefined value ${tok.text}: define it before its use (in this block or an enclosing one)`, tok.start);
  }

  private define(name: string, v: Value, tok: Token): void {
    const prev = this.defined.get(name);
    if (prev !== undefined) {
      const { line, col } = lineCol(this.lex.text, prev);
      throw this.lex.error(`${printValueName(name)} is already defined at ${line}:${col}; every value name is defined once in a graph`, tok.start);
    }
    this.defined.set(name, tok.start);
    this.scopes[this.scopes.length - 1].set(name, v);
  }

  /** `f32[N,3]`, `f32[]`, `i32`, `bool`, `tuple<T, U>`, `list<T>`. */
  private type(): IRType { return this.nested(() => this.typeBody()); }

  private typeBody(): IRType {
    const lex = this.lex;
    const tok = lex.next();
    const what = "a type (such as f32[N,3,32,32], f32[], i32, bool, tuple<f32[2], i32>, list<f32[4]>)";
    if (tok.kind !== 'ident') throw lex.error(`expected ${what}, found ${describe(tok)}`, tok.start);
    if (tok.text === 'tuple') {
      lex.expect('<', "after 'tuple'");
      const elements: IRType[] = [];
      if (!lex.eat('>')) {
        do elements.push(this.type()); while (lex.eat(','));
        lex.expect('>', "after the tuple's element types");
      }
      return tupleType(elements);
    }
    if (tok.text === 'list') {
      lex.expect('<', "after 'list'");
      const element = this.type();
      lex.expect('>', "after the list's element type");
      return listType(element);
    }
    const dtype = DTYPE_FROM_SHORT[tok.text];
    if (!Object.hasOwn(DTYPE_FROM_SHORT, tok.text) || !dtype) throw lex.error(`expected ${what}, found ${describe(tok)}`, tok.start);
    if (!lex.eat('[')) return scalarType(dtype);
    const shape: Dim[] = [];
    // Raw, not a token: a bare dim such as `+N` need not start like a token.
    if (!lex.eatRaw(']')) {
      do shape.push(lex.scanDim().dim); while (lex.eat(','));
      lex.expect(']', "after the dims of a tensor type (dims are separated by ',')");
    }
    return tensorType(dtype, shape);
  }

  /** `{key=value, ...}` (keys unique). */
  private attrDict(): Attrs {
    const lex = this.lex;
    lex.expect('{', 'to open attributes');
    const out: Record<string, AttrValue> = {};
    if (lex.eat('}')) return out;
    do {
      const { name, start } = this.word('an attribute name');
      if (Object.hasOwn(out, name)) throw lex.error(`attribute '${name}' is given twice`, start);
      lex.expect('=', `after attribute name '${name}' (write ${name}=value)`);
      setOwn(out, name, this.attrValue());
    } while (lex.eat(','));
    lex.expect('}', "after the attributes (attributes are separated by ',')");
    return out;
  }

  private attrValue(): AttrValue { return this.nested(() => this.attrValueBody()); }

  private attrValueBody(): AttrValue {
    const lex = this.lex;
    const t = lex.peek();
    if (t.kind === 'number' || t.kind === 'string') return lex.next().value;
    if (t.kind === 'punct' && t.text === '{') return this.attrDict();
    if (t.kind === 'punct' && t.text === '[') {
      lex.next();
      const items: AttrValue[] = [];
      if (!lex.eat(']')) {
        do items.push(this.attrValue()); while (lex.eat(','));
        lex.expect(']', "after a list's items (items are separated by ',')");
      }
      return items;
    }
    if (t.kind === 'ident') {
      const lit = LITERALS.get(t.text);
      if (lit !== undefined) { lex.next(); return lit.v; }
    }
    throw lex.error(`expected an attribute value (a number, "string", true, false, null, inf, nan, [list] or {dict}), found ${describe(t)}`, t.start);
  }

  /** An identifier or a string: output names, attribute and metadata keys. */
  private word(what: string): { name: string; start: number } {
    const t = this.lex.next();
    if (t.kind === 'ident' || t.kind === 'string') return { name: String(t.value), start: t.start };
    throw this.lex.error(`expected ${what}, found ${describe(t)}`, t.start);
  }

  /** The node's trailing `// scope @ loc` annotation, if any. */
  private meta(): NodeMeta {
    const c = this.lex.trailingComment();
    if (!c) return {};
    const { body, start } = c;
    let i = 0;
    const skip = () => { while (body[i] === ' ' || body[i] === '\t') i++; };
    const str = () => {
      const t = this.lex.scanString(start + i);
      i = t.end - start;
      return t.value as string;
    };
    skip();
    const meta: { scope?: string; loc?: string } = {};
    if (body[i] === '"') meta.scope = str();
    else if (i < body.length && body[i] !== '@') {
      const from = i;
      while (i < body.length && !/\s/.test(body[i])) i++;
      meta.scope = body.slice(from, i);
    }
    skip();
    if (body[i] === '@') {
      i++;
      skip();
      if (body[i] === '"') meta.loc = str();
      else {
        const loc = body.slice(i).trimEnd();
        if (!loc) throw this.lex.error("expected a source location after '@' (such as model.ts:12:5)", start + i);
        meta.loc = loc;
        i = body.length;
      }
    }
    skip();
    if (body.slice(i).trim()) throw this.lex.error(`unexpected text in the node annotation: write // scope @ file:line:col`, start + i);
    return meta;
  }
}

const LITERALS = new Map<string, { v: AttrValue }>([
  ['true', { v: true }], ['false', { v: false }], ['null', { v: null }], ['inf', { v: Infinity }], ['nan', { v: NaN }],
]);

/** Sets an own enumerable property, even for keys such as `__proto__`. */
function setOwn<T>(obj: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}
