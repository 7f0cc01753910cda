// The jit decorators (TypeScript 5 standard decorators). `@jit.script` on a class makes its
// instances run compiled: forward (and every @jit.export method) compiles lazily on first
// call, per instance. `@jit.ignore` (a call back into JavaScript), `@jit.unused` (an error if
// reached), `@jit.export` mark methods; the scripter reads the marks through the module adapter. Invariant: the original methods stay reachable
// (script-host.ts `wrapped`), so the scripter always compiles the user's code, not a wrapper.

import { nn, trace as tracer } from '@kiln/core';
import { classFiles, methodMarks, originalMethod, wrapped } from './script-host.js';
import { scriptTarget, type ScriptModule, type ScriptOptions } from './script.js';

/** The `.ts` file of the innermost stack frame outside Kiln (where the decorator is applied). */
function callerFile(): string | undefined {
  const file = tracer.userLocation()?.replace(/:\d+:\d+$/, '');
  return file && /\.(c|m)?tsx?$/.test(file) ? file : undefined;
}

const compiledInstances = new WeakMap<nn.Module, ScriptModule>();

/** The ScriptModule behind a decorated instance. */
export function scriptedOf(m: nn.Module): ScriptModule {
  let s = compiledInstances.get(m);
  if (!s) {
    s = scriptTarget(m);
    compiledInstances.set(m, s);
  }
  return s;
}

function isDecorated(m: nn.Module): boolean {
  const fn = Reflect.get(m, 'forward');
  return typeof fn === 'function' && wrapped.has(fn);
}

type AnyClass = abstract new (...args: any[]) => nn.Module;

/** `@jit.script` on a class: instances run their compiled forward (and exported methods). */
export function scriptClass<C extends AnyClass>(cls: C, ctx: ClassDecoratorContext<C>): void {
  const file = callerFile();
  if (file) classFiles.set(cls, file);
  const proto = cls.prototype as Record<string, unknown>;
  const names = ['forward', ...Object.getOwnPropertyNames(proto).filter((n) => {
    const d = Object.getOwnPropertyDescriptor(proto, n);
    return n !== 'forward' && typeof d?.value === 'function' && methodMarks.get(d.value) === 'export';
  })];
  for (const name of names) {
    const original = originalMethod(Object.create(proto) as object, name);
    if (!original) throw new Error(`@jit.script: ${String(ctx.name)} has no method '${name}' to compile`);
    const wrapper = function (this: nn.Module, ...args: unknown[]): unknown {
      return scriptedOf(this).method(name).forward(...args);
    };
    wrapped.set(wrapper, original);
    Object.defineProperty(proto, name, { value: wrapper, writable: true, configurable: true, enumerable: false });
  }
}

/**
 * `@jit.ignore`: the method stays eager JavaScript. Compiled code calls back into it at run time
 * (a `host_call` node; it takes tensors, numbers and booleans and returns tensors, numbers,
 * booleans, arrays of them or nothing). Compiling runs it once on example inputs to learn the
 * types it returns. A graph with such a call runs in this process only: saving it fails.
 */
export function ignore<F extends Function>(fn: F, _ctx: ClassMethodDecoratorContext): F {
  methodMarks.set(fn, 'ignore');
  return fn;
}

/**
 * `@jit.unused`: the method is not compiled. A call on a path that is dead when compiling
 * disappears; any other call becomes a `raise` node that fails the run if reached, naming the
 * method (typed by running the method once on example inputs). Saving works.
 */
export function unused<F extends Function>(fn: F, _ctx: ClassMethodDecoratorContext): F {
  methodMarks.set(fn, 'unused');
  return fn;
}

/** `@jit.export`: compile this method too (`scripted.method(name)`, and decorated instances run it compiled). */
export function exportMethod<F extends Function>(fn: F, _ctx: ClassMethodDecoratorContext): F {
  methodMarks.set(fn, 'export');
  return fn;
}

/**
 * `jit.script(model | fn, opts?)` compiles a module instance or a function; `@jit.script` on a
 * class makes its instances run compiled.
 * @example
 * @jit.script
 * class Gate extends nn.Module {
 *   fc = new nn.Linear(4, 4);
 *   forward(x: Tensor): Tensor { return x.sum().item() > 0 ? this.fc.forward(x) : x.neg(); }
 * }
 */
export function script<C extends AnyClass>(cls: C, ctx: ClassDecoratorContext<C>): void;
export function script(target: nn.Module | ((...args: any[]) => any), opts?: ScriptOptions): ScriptModule;
export function script(target: unknown, second?: unknown): ScriptModule | void {
  if (typeof target === 'function' && second && typeof second === 'object' && (second as { kind?: unknown }).kind === 'class') {
    return scriptClass(target as AnyClass, second as ClassDecoratorContext<AnyClass>);
  }
  // An instance of a @jit.script class: the ScriptModule its forward already runs.
  if (target instanceof nn.Module && second === undefined && isDecorated(target)) return scriptedOf(target);
  return scriptTarget(target as nn.Module | Function, (second ?? {}) as ScriptOptions);
}
