// The module tree at compile time: ModuleDict access (`get(key)`, `[key]`, `has`, `keys()`,
// `values()`, `items()`/`entries()`, `for (const k of dict)`) and traversal of any module
// (`children()`, `namedChildren()`, `modules()`, `namedModules()`, `getSubmodule(path)`, which
// also reach modules added with `addModule`). All fold to the tree as it is when compiling: keys
// must be static, loops over them unroll, and the names seen are recorded with `ctx.assume`, so
// adding or removing a module compiles again. Invariant: every module handed out carries the
// dotted path of its stateDict keys, so its weights get the names eager gives them.

import type { Node as TsNode } from 'ts-morph';
import { tsm } from './ts-morph.js';
import type { Frame, ScriptContext } from './context.js';
import type { ScriptableModule } from './host.js';
import { describe, stat, type SValue } from './values.js';

type ModuleValue = Extract<SValue, { k: 'module' }>;

const TRAVERSAL = new Set(['children', 'namedChildren', 'modules', 'namedModules', 'getSubmodule']);
const DICT = new Set(['get', 'has', 'keys', 'values', 'items', 'entries']);
const REGISTER = new Set(['addModule', 'registerModule', 'registerBuffer', 'registerParameter']);

/** The first argument of a call (where a bad key is reported), else the node itself. */
const firstArg = (at: TsNode): TsNode => (tsm().Node.isCallExpression(at) ? at.getArguments()[0] ?? at : at);
const join = (path: string, name: string) => (path && name ? `${path}.${name}` : path || name);
const moduleAt = (mod: ScriptableModule, path: string): ModuleValue => ({ k: 'module', mod, path });

/**
 * `mod.name(args)` when `name` is a container or traversal method of the library (not one the
 * user's class defines itself); undefined when it is not one of those.
 */
export function moduleMethod(ctx: ScriptContext, f: Frame, mod: ScriptableModule, path: string, name: string, args: readonly SValue[], at: TsNode): SValue | undefined {
  const fromLibrary = () => mod.methodOwner?.(name)?.library ?? true;
  if (mod.kind === 'dict' && DICT.has(name)) return dictMethod(ctx, f, mod, path, name, args, at);
  if (TRAVERSAL.has(name) && fromLibrary()) return traversal(ctx, f, mod, path, name, args, at);
  if (REGISTER.has(name) && fromLibrary()) {
    throw f.src.error(at, `${name}() inside compiled code is not supported: it would change the module while it runs. ` +
      'Call it in the constructor; the compiled code can then use the module by name or through this.children()');
  }
  if (mod.kind === 'dict' && name === 'forward') {
    throw f.src.error(at, `a ModuleDict has no forward(); call one of its modules: ${path || 'this'}.get('name').forward(x)`);
  }
  return undefined;
}

/** `a === b` / `a !== b` on modules: whether they are the same instance (static); undefined for other operands. */
export function compareModules(op: string, a: SValue, b: SValue): SValue | undefined {
  if (a.k !== 'module' || b.k !== 'module' || !['===', '!==', '==', '!='].includes(op)) return undefined;
  return stat((a.mod === b.mod) === (op === '===' || op === '=='));
}

/** `dict.name` (and `dict[name]` with a static key): a module under that key, or `length`. */
export function dictProperty(ctx: ScriptContext, f: Frame, dict: ModuleValue, name: string, at: TsNode): SValue {
  const keys = dictKeys(ctx, dict.mod, dict.path);
  if (name === 'length' || name === 'size') return stat(keys.length);
  return entry(f, dict, keys, name, at);
}

/** `dict[idx]`: the key must be a static string. */
export function dictIndex(ctx: ScriptContext, f: Frame, dict: ModuleValue, idx: SValue, at: TsNode): SValue {
  return entry(f, dict, dictKeys(ctx, dict.mod, dict.path), staticKey(f, idx, at), at);
}

/** `for (const k of dict)`: a ModuleDict iterates over its keys, as in eager code. */
export function dictIteration(ctx: ScriptContext, dict: ModuleValue): SValue[] {
  return dictKeys(ctx, dict.mod, dict.path).map((k) => stat(k));
}

function dictKeys(ctx: ScriptContext, mod: ScriptableModule, path: string): readonly string[] {
  ctx.assume(mod, '#children', path);
  return mod.keys?.() ?? (mod.namedChildren?.() ?? []).map(([k]) => k);
}

function staticKey(f: Frame, v: SValue | undefined, at: TsNode): string {
  if (v?.k === 'static' && typeof v.value === 'string') return v.value;
  throw f.src.error(at, `a ModuleDict key must be a string known when compiling (a literal, a string attribute of the module, ` +
    `or the variable of a loop over .keys()); got ${v ? describe(v) : 'no key'}. ` +
    'To choose a module by a run-time value, branch on it: if (i === 0) { y = this.heads.get(\'a\').forward(x); } else { ... }');
}

function entry(f: Frame, dict: ModuleValue, keys: readonly string[], key: string, at: TsNode): ModuleValue {
  const fld = keys.includes(key) ? dict.mod.field(key) : undefined;
  if (fld?.kind !== 'module') {
    throw f.src.error(at, `the ModuleDict ${dict.path || 'this'} has no key '${key}' (its keys: ${keys.map((k) => `'${k}'`).join(', ') || 'none'})`);
  }
  return moduleAt(fld.module, join(dict.path, key));
}

function dictMethod(ctx: ScriptContext, f: Frame, mod: ScriptableModule, path: string, name: string, args: readonly SValue[], at: TsNode): SValue {
  const dict = moduleAt(mod, path);
  const keys = dictKeys(ctx, mod, path);
  switch (name) {
    case 'get': return entry(f, dict, keys, staticKey(f, args[0], firstArg(at)), firstArg(at));
    case 'has': return stat(keys.includes(staticKey(f, args[0], firstArg(at))));
    case 'keys': return { k: 'list', items: keys.map((k) => stat(k)) };
    case 'values': return { k: 'list', items: keys.map((k) => entry(f, dict, keys, k, at)) };
    default: return { k: 'list', items: keys.map((k) => ({ k: 'list', items: [stat(k), entry(f, dict, keys, k, at)] }) as SValue) };
  }
}

function namedChildren(ctx: ScriptContext, f: Frame, mod: ScriptableModule, path: string, at: TsNode): readonly (readonly [string, ScriptableModule])[] {
  if (!mod.namedChildren) throw f.src.error(at, `the children of ${mod.className} are not known to jit.script`);
  ctx.assume(mod, '#children', path);
  return mod.namedChildren();
}

function traversal(ctx: ScriptContext, f: Frame, mod: ScriptableModule, path: string, name: string, args: readonly SValue[], at: TsNode): SValue {
  const pair = (k: string, v: SValue): SValue => ({ k: 'list', items: [stat(k), v] });
  if (name === 'children' || name === 'namedChildren') {
    const kids = namedChildren(ctx, f, mod, path, at).map(([k, m]) => [k, moduleAt(m, join(path, k))] as const);
    return { k: 'list', items: kids.map(([k, m]) => (name === 'children' ? m : pair(k, m))) };
  }
  if (name === 'modules' || name === 'namedModules') {
    const prefix = args[0];
    if (prefix && !(prefix.k === 'static' && (typeof prefix.value === 'string' || prefix.value === undefined))) {
      throw f.src.error(at, `namedModules(prefix) needs a string known when compiling; got ${describe(prefix)}`);
    }
    const start = prefix?.k === 'static' && typeof prefix.value === 'string' ? prefix.value : '';
    // Depth first, each module once (a shared module under its first name), as eager lists them.
    const out: SValue[] = [];
    const seen = new Set<ScriptableModule>();
    const walk = (m: ScriptableModule, rel: string, shown: string) => {
      if (seen.has(m)) return;
      seen.add(m);
      const v = moduleAt(m, join(path, rel));
      out.push(name === 'modules' ? v : pair(shown, v));
      for (const [k, c] of namedChildren(ctx, f, m, join(path, rel), at)) walk(c, join(rel, k), join(shown, k));
    };
    walk(mod, '', start);
    return { k: 'list', items: out };
  }
  // getSubmodule('a.b')
  const target = args[0];
  if (target?.k !== 'static' || typeof target.value !== 'string') {
    throw f.src.error(firstArg(at), `getSubmodule() needs a path known when compiling (a string literal such as 'encoder.0'); got ${target ? describe(target) : 'nothing'}`);
  }
  let cur = moduleAt(mod, path);
  if (target.value === '') return cur;
  for (const part of target.value.split('.')) {
    const fld = cur.mod.field(part);
    ctx.assume(cur.mod, part, cur.path);
    if (fld?.kind !== 'module') throw f.src.error(firstArg(at), `getSubmodule('${target.value}'): ${cur.mod.className} has no submodule '${part}'`);
    cur = moduleAt(fld.module, join(cur.path, part));
  }
  return cur;
}
