// Symbolic dim algebra. A dim is a number or a string; a string is a polynomial with integer
// coefficients over atoms, in ONE canonical text per value, so dims compare by text.
// Invariant: every function here returns canonical dims (a constant comes back as a number), and
// anything it cannot express exactly gives `undefined` — never a guess; callers raise the error
// with the op and shapes in it.
//
//   dim    := poly                                   (spaces between tokens are skipped)
//   poly   := ['-'] term (('+' | '-') term)*
//   term   := factor ('*' factor)*
//   factor := (int | ident | '(' poly ')') slice*     ident := [A-Za-z_][A-Za-z0-9_.]*
//   slice  := '[' [int] ':' [int] ':' int ']'         (Python start:end:step, step >= 1)
//
// An atom is a plain symbol (`N`, `nnz`) or a derived one: a slice of a symbolic dim, whose
// length depends on clamping (`T[1::1]`, `(N*64)[:-1:1]`); the algebra treats every atom as an
// unknown (a slice of a number is just evaluated). Canonical text: atoms of a term sorted by
// code unit, coefficient last (`B*T*64`); terms by degree, then by their atoms, the constant last
// (`M*N+N*2+3`); a slice prints `base[start:end:step]` with a start of 0 written empty and a
// compound base in parentheses. bind-symbols.ts binds the symbols to the sizes of real inputs.

import type { Dim } from '../shape.js';

/** A dim string that does not follow the grammar above, or arithmetic past the limits below. */
export class DimError extends Error {
  /** @param offset the character offset in `text`, or null for a limit hit by arithmetic. */
  constructor(readonly text: string, readonly offset: number | null, reason: string) {
    super(offset === null ? `symbolic dim ${text ? `'${text}' ` : ''}${reason}` : `dim '${text}' at character ${offset}: ${reason}`);
    this.name = 'DimError';
  }
}

/** One monomial: sorted atoms (repeated for powers) and an integer coefficient. */
interface Term { readonly atoms: readonly string[]; readonly coef: number }
/** Terms keyed by their atoms joined with `*` (`''` for the constant); no zero coefficients. */
type Poly = Map<string, Term>;

const IDENT_START = /[A-Za-z_]/;
const IDENT_CHAR = /[A-Za-z0-9_.]/;
const MAX_DIM_TEXT = 4096;
// Limits that keep hostile dims (from a file) cheap: `(a+b)*(c+d)*...` would double per factor.
const MAX_TERMS = 256;
const MAX_DEGREE = 64;

// ---- polynomial arithmetic ---------------------------------------------------------------------

function checked(n: number, what: string): number {
  if (!Number.isSafeInteger(n)) throw new DimError('', null, `arithmetic overflowed in ${what} (coefficients must stay below 2^53)`);
  return n;
}

function addTerm(p: Poly, atoms: readonly string[], coef: number): void {
  if (coef === 0) return;
  if (atoms.length > MAX_DEGREE) throw new DimError('', null, `has a term of degree ${atoms.length}, above the limit of ${MAX_DEGREE}`);
  const key = atoms.join('*');
  const old = p.get(key);
  if (!old && p.size >= MAX_TERMS) throw new DimError('', null, `has more than ${MAX_TERMS} terms`);
  const c = checked((old?.coef ?? 0) + coef, 'a sum');
  if (c === 0) p.delete(key);
  else p.set(key, { atoms, coef: c });
}

const constPoly = (n: number): Poly => { const p: Poly = new Map(); addTerm(p, [], n); return p; };
const atomPoly = (a: string): Poly => { const p: Poly = new Map(); addTerm(p, [a], 1); return p; };

function polyAdd(a: Poly, b: Poly, sign = 1): Poly {
  const out: Poly = new Map(a);
  for (const t of b.values()) addTerm(out, t.atoms, sign * t.coef);
  return out;
}

const mergeAtoms = (x: readonly string[], y: readonly string[]): string[] => [...x, ...y].sort(cmpText);

function polyMul(a: Poly, b: Poly): Poly {
  const out: Poly = new Map();
  for (const x of a.values()) for (const y of b.values()) addTerm(out, mergeAtoms(x.atoms, y.atoms), checked(x.coef * y.coef, 'a product'));
  return out;
}

function cmpText(a: string, b: string): number { return a < b ? -1 : a > b ? 1 : 0; }

/** Graded order: higher degree first, then atoms by text; the constant last. */
function cmpTerm(a: Term, b: Term): number {
  if (a.atoms.length !== b.atoms.length) return b.atoms.length - a.atoms.length;
  for (let i = 0; i < a.atoms.length; i++) {
    const c = cmpText(a.atoms[i], b.atoms[i]);
    if (c) return c;
  }
  return 0;
}

const sortedTerms = (p: Poly): Term[] => [...p.values()].sort(cmpTerm);

/** `num / den` when exact over the integers (long division in the graded order), else undefined. */
function polyDiv(num: Poly, den: Poly): Poly | undefined {
  if (den.size === 0) return undefined;
  const lead = sortedTerms(den)[0];
  let rest: Poly = new Map(num);
  const q: Poly = new Map();
  for (let guard = 0; rest.size > 0; guard++) {
    if (guard > 10_000) return undefined;
    const top = sortedTerms(rest)[0];
    const atoms = removeAtoms(top.atoms, lead.atoms);
    if (!atoms || top.coef % lead.coef !== 0) return undefined;
    const mono: Poly = new Map();
    addTerm(mono, atoms, top.coef / lead.coef);
    addTerm(q, atoms, top.coef / lead.coef);
    rest = polyAdd(rest, polyMul(mono, den), -1);
  }
  return q;
}

/** The multiset difference `of - remove`, or undefined when `remove` is not contained. */
function removeAtoms(of: readonly string[], remove: readonly string[]): string[] | undefined {
  const left = [...of];
  for (const a of remove) {
    const i = left.indexOf(a);
    if (i < 0) return undefined;
    left.splice(i, 1);
  }
  return left;
}

// ---- text ------------------------------------------------------------------------------------

function termText(t: Term, first: boolean): string {
  const abs = Math.abs(t.coef);
  const sign = t.coef < 0 ? '-' : first ? '' : '+';
  if (!t.atoms.length) return `${sign}${abs}`;
  return `${sign}${t.atoms.join('*')}${abs === 1 ? '' : `*${abs}`}`;
}

/** The canonical dim of a polynomial: a number when constant. */
function polyDim(p: Poly): Dim {
  if (p.size === 0) return 0;
  const terms = sortedTerms(p);
  if (terms.length === 1 && !terms[0].atoms.length) return terms[0].coef;
  return terms.map((t, i) => termText(t, i === 0)).join('');
}

/** Text of a dim used as a slice base: an atom stays bare, anything else goes in parentheses. */
function baseText(p: Poly): string {
  const d = polyDim(p);
  const one = p.size === 1 ? [...p.values()][0] : undefined;
  return one && one.coef === 1 && one.atoms.length === 1 ? String(d) : `(${d})`;
}

/** Length of the Python slice `start:end:step` of a dim of `size` (bounds clamped, as PyTorch). */
export function sliceLength(size: number, start: number | null, end: number | null, step: number): number {
  let s = start ?? 0, e = end ?? size;
  if (s < 0) s += size;
  if (e < 0) e += size;
  s = Math.min(Math.max(s, 0), size);
  e = Math.min(Math.max(e, s), size);
  return Math.ceil((e - s) / step);
}

function slicePoly(base: Poly, start: number | null, end: number | null, step: number): Poly {
  const d = polyDim(base);
  if (typeof d === 'number') return constPoly(sliceLength(d, start, end, step));
  if (!start && end === null && step === 1) return base;
  return atomPoly(`${baseText(base)}[${start ? start : ''}:${end ?? ''}:${step}]`);
}

class Reader {
  pos = 0;
  constructor(readonly text: string) {}

  fail(reason: string): never { throw new DimError(this.text, this.pos, reason); }
  private peek(): string { return this.text[this.pos] ?? ''; }
  private skip(): void { while (this.peek() === ' ') this.pos++; }
  private eat(ch: string): boolean {
    this.skip();
    if (this.peek() !== ch) return false;
    this.pos++;
    return true;
  }

  private int(): number | undefined {
    this.skip();
    const m = /^-?\d+/.exec(this.text.slice(this.pos));
    if (!m) return undefined;
    this.pos += m[0].length;
    const n = Number(m[0]);
    if (!Number.isSafeInteger(n)) this.fail(`integer ${m[0]} is too large`);
    return n;
  }

  poly(depth: number): Poly {
    if (depth > 32) this.fail('nested deeper than 32 parentheses');
    let p = this.eat('-') ? polyMul(constPoly(-1), this.term(depth)) : this.term(depth);
    for (;;) {
      if (this.eat('+')) p = polyAdd(p, this.term(depth));
      else if (this.eat('-')) p = polyAdd(p, this.term(depth), -1);
      else return p;
    }
  }

  private term(depth: number): Poly {
    let p = this.factor(depth);
    while (this.eat('*')) p = polyMul(p, this.factor(depth));
    return p;
  }

  private factor(depth: number): Poly {
    this.skip();
    const c = this.peek();
    let p: Poly;
    if (/\d/.test(c)) {
      p = constPoly(this.int()!);
    } else if (c === '(') {
      this.pos++;
      p = this.poly(depth + 1);
      if (!this.eat(')')) this.fail("expected ')'");
    } else if (IDENT_START.test(c)) {
      const start = this.pos;
      while (IDENT_CHAR.test(this.peek())) this.pos++;
      p = atomPoly(this.text.slice(start, this.pos));
    } else {
      this.fail(c ? `unexpected '${c}'` : 'unexpected end');
    }
    while (this.peek() === '[') {
      this.pos++;
      const start = this.int() ?? null;
      if (!this.eat(':')) this.fail("expected ':' in a slice");
      const end = this.int() ?? null;
      if (!this.eat(':')) this.fail("expected ':' before the slice step");
      const step = this.int();
      if (step === undefined || step < 1) this.fail('the slice step must be a positive integer');
      if (!this.eat(']')) this.fail("expected ']'");
      p = slicePoly(p, start, end, step);
    }
    return p;
  }
}

const cache = new Map<string, Poly>();

function parsePoly(text: string): Poly {
  const hit = cache.get(text);
  if (hit) return hit;
  if (text.length > MAX_DIM_TEXT) throw new DimError(text.slice(0, 80), MAX_DIM_TEXT, `longer than ${MAX_DIM_TEXT} characters`);
  const r = new Reader(text);
  const p = r.poly(0);
  if (r.pos < text.length) r.fail(`unexpected '${text[r.pos]}'`);
  if (cache.size > 4096) cache.clear();
  cache.set(text, p);
  return p;
}

const toPoly = (d: Dim): Poly => (typeof d === 'number' ? constPoly(d) : parsePoly(d));

// ---- public API --------------------------------------------------------------------------------

/**
 * Reads a dim's text into its canonical form; throws DimError naming the offset.
 *
 * @example
 * ```ts
 * parseDim('64*N');   // 'N*64'
 * parseDim('2*3');    // 6
 * ```
 */
export function parseDim(text: string): Dim { return polyDim(parsePoly(text)); }

/** The canonical form of a dim (numbers are returned as they are). */
export function canonicalDim(d: Dim): Dim { return typeof d === 'number' ? d : parseDim(d); }

/** Whether `d` is already canonical: a non-negative safe integer, or a string in canonical text. */
export function isCanonicalDim(d: Dim): boolean {
  if (typeof d === 'number') return Number.isSafeInteger(d) && d >= 0;
  try {
    return parseDim(d) === d;
  } catch {
    return false;
  }
}

/** Whether two dims are the same size for every value of their symbols (`N*64` = `64*N`). */
export function dimEquals(a: Dim, b: Dim): boolean {
  if (a === b) return true;
  if (typeof a === 'number' && typeof b === 'number') return false;
  return canonicalDim(a) === canonicalDim(b);
}

/** Whether the dim is a known number (after canonicalization, `2*3` is known). */
export function isConcreteDim(d: Dim): boolean { return typeof canonicalDim(d) === 'number'; }

/** `a * b`, canonical. @example dimMul('N', 64) // 'N*64' */
export function dimMul(a: Dim, b: Dim): Dim {
  if (typeof a === 'number' && typeof b === 'number') return a * b;
  return polyDim(polyMul(toPoly(a), toPoly(b)));
}

/** `a + b`, canonical. @example dimAdd('N', 'N') // 'N*2' */
export function dimAdd(a: Dim, b: Dim): Dim {
  if (typeof a === 'number' && typeof b === 'number') return a + b;
  return polyDim(polyAdd(toPoly(a), toPoly(b)));
}

/** `a - b`, canonical (may be negative when concrete; callers check sizes). */
export function dimSub(a: Dim, b: Dim): Dim {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return polyDim(polyAdd(toPoly(a), toPoly(b), -1));
}

/**
 * `a / b` when the quotient is a whole expression, else undefined.
 *
 * @example
 * ```ts
 * dimDivExact('N*8192', 8192); // 'N'
 * dimDivExact('N*8192', 'N');  // 8192
 * dimDivExact('N', 2);         // undefined
 * ```
 */
export function dimDivExact(a: Dim, b: Dim): Dim | undefined {
  if (typeof a === 'number' && typeof b === 'number') return b !== 0 && a % b === 0 ? a / b : undefined;
  if (b === 0) return undefined;
  const q = polyDiv(toPoly(a), toPoly(b));
  return q && polyDim(q);
}

/**
 * floor(a / n) (or ceil) for a positive integer n, when it is a whole expression: every
 * non-constant term of `a` divisible by n, so only the constant needs rounding. Else undefined.
 *
 * @example
 * ```ts
 * dimFloorDiv('H*2-1', 2); // 'H-1'
 * dimFloorDiv('H-1', 2);   // undefined
 * ```
 */
export function dimFloorDiv(a: Dim, n: number, ceil = false): Dim | undefined {
  if (!Number.isSafeInteger(n) || n <= 0) return undefined;
  const round = ceil ? Math.ceil : Math.floor;
  if (typeof a === 'number') return round(a / n);
  const out: Poly = new Map();
  for (const t of parsePoly(a).values()) {
    if (!t.atoms.length) addTerm(out, [], round(t.coef / n));
    else if (t.coef % n !== 0) return undefined;
    else addTerm(out, t.atoms, t.coef / n);
  }
  return polyDim(out);
}

/** Product of dims, canonical. */
export function dimProductOf(dims: readonly Dim[]): Dim {
  let n = 1, p: Poly | undefined;
  for (const d of dims) {
    if (typeof d === 'number') n *= d;
    else p = p ? polyMul(p, parsePoly(d)) : parsePoly(d);
  }
  return p ? polyDim(polyMul(p, constPoly(n))) : n;
}

/** Sum of dims, canonical. */
export function dimSumOf(dims: readonly Dim[]): Dim {
  let n = 0, p: Poly | undefined;
  for (const d of dims) {
    if (typeof d === 'number') n += d;
    else p = p ? polyAdd(p, parsePoly(d)) : parsePoly(d);
  }
  return p ? polyDim(polyAdd(p, constPoly(n))) : n;
}

/**
 * Length of `d[start:end:step]` (Python bounds). A concrete dim gives a number; a symbolic one
 * keeps its text for the full slice and otherwise becomes a derived atom, since clamping makes
 * the length depend on the size: `sliceDim('T', 1, null, 1)` is `'T[1::1]'`.
 */
export function sliceDim(d: Dim, start: number | null, end: number | null, step: number): Dim {
  if (typeof d === 'number') return sliceLength(d, start, end, step);
  return polyDim(slicePoly(parsePoly(d), start, end, step));
}

/** The atoms a dim mentions, sorted (`'N*T+M'` → `['M', 'N', 'T']`; a slice atom whole). */
export function dimAtoms(d: Dim): string[] {
  if (typeof d === 'number') return [];
  const set = new Set<string>();
  for (const t of parsePoly(d).values()) t.atoms.forEach((a) => set.add(a));
  return [...set].sort(cmpText);
}

/** The terms of a dim's polynomial, in canonical order: `'N*2+M+3'` → [{M,1}, {N,2}, {3}]. */
export function dimTerms(d: Dim): { atoms: readonly string[]; coef: number }[] {
  return typeof d === 'number' ? (d ? [{ atoms: [], coef: d }] : []) : sortedTerms(parsePoly(d));
}

/** Whether the atom is a plain symbol (`N`), not a derived slice. */
export function isPlainSymbol(atom: string): boolean {
  return IDENT_START.test(atom[0] ?? '') && [...atom].every((c) => IDENT_CHAR.test(c));
}

/** Bindings of symbols to sizes, e.g. from `bindSymbols`. */
export type SymbolBindings = ReadonlyMap<string, number>;

function evalAtom(atom: string, env: SymbolBindings): number | undefined {
  const bound = env.get(atom);
  if (bound !== undefined || isPlainSymbol(atom)) return bound;
  // A derived slice atom `base[start:end:step]`: evaluate the base, then slice.
  const m = /\[(-?\d*):(-?\d*):(\d+)\]$/.exec(atom);
  if (!m) return undefined;
  let base = atom.slice(0, m.index);
  if (base.startsWith('(') && base.endsWith(')')) base = base.slice(1, -1);
  const size = evalDim(base, env);
  if (size === undefined) return undefined;
  return sliceLength(size, m[1] === '' ? null : Number(m[1]), m[2] === '' ? null : Number(m[2]), Number(m[3]));
}

/**
 * The size `d` stands for under `env`, or undefined when a symbol is unbound or the result is
 * not a non-negative integer.
 *
 * @example
 * ```ts
 * evalDim('N*64', new Map([['N', 2]])); // 128
 * evalDim('T[1::1]', new Map([['T', 5]])); // 4
 * ```
 */
export function evalDim(d: Dim, env: SymbolBindings): number | undefined {
  if (typeof d === 'number') return d;
  let total = 0;
  for (const t of parsePoly(d).values()) {
    let v = t.coef;
    for (const a of t.atoms) {
      const x = evalAtom(a, env);
      if (x === undefined) return undefined;
      v *= x;
    }
    total += v;
  }
  return Number.isSafeInteger(total) && total >= 0 ? total : undefined;
}
