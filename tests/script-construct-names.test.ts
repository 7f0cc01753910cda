// jit.script names an unsupported construct in TypeScript words ("'delete'", "class
// expressions", "generators") with what to do, never by its ts-morph kind name
// (`DeleteExpression`, `SuperKeyword`): end to end over a fixture of unsupported constructs, and
// over every node of a snippet that uses (nearly) every kind of syntax.
import { describe, it, expect } from 'vitest';
import { fileURLToPath } from 'node:url';
import { Project, SyntaxKind } from 'ts-morph';
import { jit, randn } from 'kiln';
import { KIND_NAME, unsupportedConstruct, constructName } from '../compiler/src/script/construct-names.js';
import * as models from './script-models/unsupported-constructs.js';

const FILE = fileURLToPath(new URL('./script-models/unsupported-constructs.ts', import.meta.url));

describe('unsupported constructs are named in user words', () => {
  const fns = Object.entries(models).filter(([, v]) => typeof v === 'function') as [string, (x: unknown) => unknown][];
  it('the fixture has the cases', () => expect(fns.length).toBeGreaterThanOrEqual(17));

  it.each(fns)('%s', (name, fn) => {
    let err: unknown;
    try { jit.script(fn as never, { sourceFile: FILE }).forward(randn([2, 3])); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(jit.ScriptError);
    const e = err as jit.ScriptError;
    expect(e.file).toBe(FILE);
    expect(e.reason).not.toMatch(KIND_NAME);
    expect(e.reason).not.toMatch(/[A-Z][a-z]+(Keyword|Expression|Statement|Declaration|Literal)\b/);
    // Each message says what to do after the semicolon.
    expect(e.reason).toMatch(/not supported[^;]*; \S/);
    expect(name).toMatch(/^uses/);
  });

  it('super and private fields read as such', () => {
    const sf = new Project({ useInMemoryFileSystem: true }).createSourceFile('a.ts',
      'class A extends B { #n = 1; f() { return super.f() + this.#n; } }');
    const sup = sf.getFirstDescendantByKindOrThrow(SyntaxKind.SuperKeyword);
    expect(unsupportedConstruct(sup)).toMatch(/^'super' calls and 'super' property reads are not supported by jit\.script; copy/);
    const priv = sf.getDescendantsOfKind(SyntaxKind.PrivateIdentifier)[1];
    expect(constructName(priv)).toBe("private '#fields' and '#methods'");
  });

  it('no node of any kind gets a message with a kind name', () => {
    const sf = new Project({ useInMemoryFileSystem: true }).createSourceFile('all.tsx', `
      import * as ns from 'x'; import def from 'y';
      export enum Color { Red, Green }
      interface Shape { w: number } type Alias = Shape | null; declare namespace N { const v: number; }
      @dec class C<T> extends D implements Shape { static s = 1; #p = 2; w = 3; get g() { return this.#p; } set g(v) {}
        constructor(private q: number) { super(); } async *m(a = 1, ...r: number[]) { yield* r; await a; } }
      function f(this: unknown, { a, b: [c] }: any): void {
        label: for (const k in {}) { continue label; } for (let i = 0; i < 2; i++) {} while (false) {} do {} while (false);
        switch (1) { case 1: break; default: } try { throw 1; } catch { } finally { } with (Math) {} debugger;
        const o = { a, ...ns, m() {}, get x() { return 1; }, [c]: 2 }; const arr = [1, , ...[2]];
        const t = \`x\${a}y\`; String.raw\`z\`; typeof a; void 0; delete o.a; new D(); new.target; import.meta; import('z');
        a ? b : c; a ?? b; a?.b; a!; a as any; <any>a; a satisfies unknown; (a, b); !a; ~a; -a; a++; --a; a **= 2;
        /re/g; 10n; 0x1; 'str'; null; undefined; true; class {}; function () {}; () => 1; const j = <div>{a}</div>; <></>;
      }`);
    let seen = 0;
    sf.forEachDescendant((n) => {
      seen++;
      const msg = unsupportedConstruct(n);
      expect(msg, `${n.getKindName()}: ${msg}`).not.toMatch(/[A-Z][a-z]+(Keyword|Expression|Statement|Declaration|Literal)\b/);
      expect(msg).toMatch(/ not supported by jit\.script; \S/);
    });
    expect(seen).toBeGreaterThan(200);
  });
});
