// The WebAssembly element body of fused_elementwise (kernel in runtime/wasm/fused.ts) behind
// ir-spec's ElementBodyFn: a body whose nodes are all float32 add/sub/mul/div/maximum/minimum/
// neg/relu/abs/exp/sigmoid/tanh or literals is compiled once into a register program (cached per Block), its
// inputs copied into the kernel memory, run block by block in SIMD and the result copied into the
// node's destination. Any other body, or fewer than MIN_ELEMENTS elements (MIN_MATH_ELEMENTS for a
// body with exp/sigmoid/tanh), returns false and
// runs ir-spec's JavaScript loop. Invariant: each instruction is one float32 operation per lane,
// so results equal the reference up to the float32 rounding of each body node (exp, sigmoid and
// tanh: within 2 ulp of it, runtime/wasm/lib/expf.ts).

import type { Block, ElementBodyFn, Value } from '@kiln/ir-spec';
import type { WasmHeap } from './heap.js';
import { KernelIO } from './io.js';
import { MIN_ELEMENTS } from './elementwise.js';
import { MATH_CODES, MIN_MATH_ELEMENTS } from './math.js';

/** Instruction codes (runtime/wasm/fused.ts keeps the same table) and each op's arity. */
const CODES = new Map<string, [code: number, arity: number]>([
  ['add', [0, 2]], ['sub', [1, 2]], ['mul', [2, 2]], ['div', [3, 2]], ['maximum', [4, 2]], ['minimum', [5, 2]],
  ['neg', [6, 1]], ['relu', [7, 1]], ['abs', [8, 1]],
  ['exp', [9, 1]], ['sigmoid', [10, 1]], ['tanh', [11, 1]],
]);
/** Floats per block of the kernel (a temporary or constant register holds one block). */
const BLOCK = 256;

/** A body as the kernel's program: quads (op, dst, a, b) over registers inputs…, output, constants…, temporaries…. */
interface Program {
  readonly code: Int32Array;
  readonly inputs: number;
  readonly constants: readonly number[];
  readonly temps: number;
  /** Whether it computes e^x, sigmoid or tanh. */
  readonly transcendental: boolean;
}

/** The body's program, or null when a node is not one the kernel has. */
function compile(body: Block): Program | null {
  const nIn = body.args.length, out = nIn, constants: number[] = [];
  const reg = new Map<Value, number>(body.args.map((a, i) => [a, i]));
  const [y] = body.yields;
  const pending: { code: number; out: Value; args: readonly (Value | null)[] }[] = [];
  for (const n of body.nodes) {
    if (n.op === 'constant') { constants.push(n.attrs.value as number); reg.set(n.outputs[0], -constants.length); continue; }
    const known = CODES.get(n.op);
    if (!known || n.inputs.length !== known[1]) return null;
    pending.push({ code: known[0], out: n.outputs[0], args: n.inputs });
  }
  if (!pending.some((p) => p.out === y)) return null; // the body yields an argument or a literal
  // Registers: constants after the output, then one temporary per node (the yielded one writes the output).
  const firstConst = out + 1, firstTemp = firstConst + constants.length;
  for (const [v, r] of reg) if (r < 0) reg.set(v, firstConst - r - 1);
  let temps = 0;
  const code = new Int32Array(pending.length * 4);
  pending.forEach((p, q) => {
    const [a, b = a] = p.args.map((v) => reg.get(v!)!);
    const d = p.out === y ? out : firstTemp + temps++;
    reg.set(p.out, d);
    code.set([p.code, d, a, b], q * 4);
  });
  return { code, inputs: nIn, constants, temps, transcendental: body.nodes.some((n) => MATH_CODES.has(n.op)) };
}

export function wasmElementBody(heap: WasmHeap): ElementBodyFn {
  const programs = new WeakMap<Block, Program | null>();
  return (body, srcs, dst, n) => {
    if (n < MIN_MATH_ELEMENTS || !srcs.every((s) => s instanceof Float32Array && s.length === n)) return false;
    let p = programs.get(body);
    if (p === undefined) programs.set(body, (p = compile(body)));
    // A body with e^x, sigmoid or tanh pays for the copies from fewer elements (see math.ts).
    if (!p || n < (p.transcendental ? MIN_MATH_ELEMENTS : MIN_ELEMENTS)) return false;
    const n4 = (n + 3) & ~3, nRegs = p.inputs + 1 + p.constants.length + p.temps;
    // Operands in the kernel memory are used where they lie when n is a multiple of 4 (the kernel
    // reads and writes whole vectors); others are copied in with zeros up to n4.
    const io = new KernelIO(heap), out = dst as Float32Array;
    try {
      const ins = srcs.map((s) => io.in(s as Float32Array, n4 - n)), outAt = n4 === n ? io.out(n * 4, out) : io.temp(n4 * 4);
      const fixed = io.temp(Math.max(1, p.constants.length + p.temps) * BLOCK * 4), prog = io.temp(p.code.length * 4), regs = io.temp(nRegs * 8);
      const f = heap.f32();
      p.constants.forEach((c, k) => f.fill(c, (fixed >> 2) + k * BLOCK, (fixed >> 2) + (k + 1) * BLOCK));
      const i32 = new Int32Array(heap.memory.buffer);
      i32.set(p.code, prog >> 2);
      const table = new Int32Array(nRegs * 2);
      ins.forEach((at, k) => table.set([at, 1], 2 * k));
      table.set([outAt, 1], 2 * p.inputs);
      for (let r = p.inputs + 1; r < nRegs; r++) table.set([fixed + (r - p.inputs - 1) * BLOCK * 4, 0], 2 * r);
      i32.set(table, regs >> 2);
      heap.k.fusedF32(n4, p.code.length / 4, prog, regs);
      io.copyOut(outAt, out);
      return true;
    } finally {
      io.free();
    }
  };
}
