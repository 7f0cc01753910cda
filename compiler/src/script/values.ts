// The scripter's abstract values: what a TypeScript expression evaluates to at compile time.
// Tensors and run-time scalars are IR values; numbers, booleans and strings known at compile
// time stay static (folded, never emitted); modules, lists and shapes are compile-time
// structure. Invariant: an SValue never holds a Value from a region that has been closed:
// values leave a region only through its yields (see control.ts).

import type { Dim, DType, Value } from '@kiln/ir-spec';
import type { ScriptableModule } from './host.js';
import type * as tm from 'ts-morph';
import type { Frame } from './context.js';

export type StaticValue = number | boolean | string | null | undefined;

export type SValue =
  | { readonly k: 'tensor'; readonly v: Value }
  /** A run-time scalar; `dim` is its symbolic size when it comes from a shape. */
  | { readonly k: 'scalar'; readonly v: Value; readonly dim?: Dim }
  | { readonly k: 'static'; readonly value: StaticValue }
  | { readonly k: 'list'; readonly items: readonly SValue[] }
  | { readonly k: 'object'; readonly entries: Readonly<Record<string, SValue>> }
  | { readonly k: 'module'; readonly mod: ScriptableModule; readonly path: string }
  | { readonly k: 'shape'; readonly of: Value }
  /** A namespace or library function name (`Math`, `F`, `F.relu`, `cat`). */
  | { readonly k: 'ns'; readonly name: string }
  /**
   * A function declared in the model's file (inlined when called), or a closure: an arrow
   * function or function expression with the frame and environment it was created in (closures.ts).
   */
  | { readonly k: 'fn'; readonly name: string; readonly decl: tm.FunctionDeclaration | tm.ArrowFunction | tm.FunctionExpression | tm.MethodDeclaration;
    readonly closure?: { readonly frame: Frame; readonly env: Env } };

export const stat = (value: StaticValue): SValue => ({ k: 'static', value });
export const tensor = (v: Value): SValue => ({ k: 'tensor', v });

/** The dtype a static number or boolean takes when it must become a run-time scalar. */
export function staticDType(value: StaticValue): DType | undefined {
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'number') return Number.isInteger(value) ? 'int32' : 'float32';
  return undefined;
}

/** A short description of a value's kind for error messages. */
export function describe(v: SValue): string {
  switch (v.k) {
    case 'tensor': return 'a Tensor';
    case 'scalar': return `a run-time ${v.v.type.kind === 'scalar' ? v.v.type.dtype : ''} scalar`;
    case 'static': return v.value === null ? 'null' : v.value === undefined ? 'undefined' : `the ${typeof v.value} ${JSON.stringify(v.value)}`;
    case 'list': return `an array of ${v.items.length}`;
    case 'object': return 'an object literal';
    case 'module': return `the module ${v.path || 'this'} (${v.mod.className})`;
    case 'shape': return 'a tensor shape';
    case 'ns': return `'${v.name}'`;
    case 'fn': return `the function ${v.name}`;
  }
}

/** Variable bindings of one lexical block. Isolated scopes (branches, loop bodies) record
 * assignments to outer variables locally, so the two arms of an `if` can be merged. */
export class Env {
  private readonly own = new Map<string, { v: SValue; mutable: boolean }>();
  private readonly over = new Map<string, SValue>();

  constructor(readonly parent?: Env, readonly isolated = false) {}

  lookup(name: string): SValue | undefined {
    return this.own.get(name)?.v ?? this.over.get(name) ?? this.parent?.lookup(name);
  }

  has(name: string): boolean { return this.own.has(name) || !!this.parent?.has(name); }

  declaresHere(name: string): boolean { return this.own.has(name); }

  isMutable(name: string): boolean {
    const o = this.own.get(name);
    return o ? o.mutable : !!this.parent?.isMutable(name);
  }

  declare(name: string, v: SValue, mutable: boolean): void { this.own.set(name, { v, mutable }); }

  assign(name: string, v: SValue): void {
    const o = this.own.get(name);
    if (o) o.v = v;
    else if (this.isolated) this.over.set(name, v);
    else this.parent?.assign(name, v);
  }

  /** Outer variables assigned in this isolated scope. */
  overrides(): ReadonlyMap<string, SValue> { return this.over; }
}
