// Functions that each use one construct jit.script refuses; their messages must describe the
// construct in TypeScript words, never by its ts-morph kind name. (Names here avoid words that
// look like kind names, so a match in a message can only come from the scripter.)
/* eslint-disable */
import type { Tensor } from 'kiln';

export function usesDelete(x: Tensor): Tensor {
  const o: { a?: number } = { a: 1 };
  delete o.a;
  return x;
}

export function usesTypeof(x: Tensor): Tensor {
  const t = typeof x;
  return x;
}

export function usesVoid(x: Tensor): Tensor {
  void 0;
  return x;
}

export function usesClassExpr(x: Tensor): Tensor {
  const K = class { s = 2; };
  return x;
}

export function usesRegex(x: Tensor): Tensor {
  const r = /ab+c/;
  return x;
}

export function usesBigInt(x: Tensor): Tensor {
  const n = 10n;
  return x;
}

export function usesHole(x: Tensor): Tensor {
  const a = [1, , 2];
  return x;
}

export function usesDebugger(x: Tensor): Tensor {
  debugger;
  return x;
}

export function usesLocalType(x: Tensor): Tensor {
  type Pair = [number, number];
  return x;
}

export function usesGetter(x: Tensor): Tensor {
  const o = { get two() { return 2; } };
  return x;
}

export function usesObjectSpread(x: Tensor): Tensor {
  const p = { a: 1 };
  const o = { ...p };
  return x;
}

export function usesDynamicImport(x: Tensor): Tensor {
  import('node:fs');
  return x;
}

export function usesTaggedTemplate(x: Tensor): Tensor {
  const s = String.raw`a${1}b`;
  return x;
}

export function usesForIn(x: Tensor): Tensor {
  const o = { a: 1 };
  for (const k in o) x = x.add(1);
  return x;
}

export function usesNestedFunction(x: Tensor): Tensor {
  function twice(y: Tensor): Tensor { return y.mul(2); }
  return twice(x);
}

export function usesThrow(x: Tensor): Tensor {
  throw new Error('no');
}

export function* usesGenerator(x: Tensor): Generator<Tensor> {
  yield x;
}
