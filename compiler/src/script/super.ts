// `super.method(args)`: a subclass calling its base class's forward or helper. The base class is
// the one JavaScript reaches: the first class above the method's own class, on the instance's
// prototype chain, that defines the method. Its method is inlined from source like any other
// method of the module (`this` is still the instance): from the `.ts` file when the base class is
// declared in, or imported into, the file being read; else from its runtime text. A built-in
// layer's method (`class MyLinear extends nn.Linear`) is recorded through the host, as a call to
// that layer is, with the base class's method rather than the override. Invariant: the
// method inlined is exactly the one `super.method` calls eagerly, or the call is a ScriptError.

import type { Node as TsNode, ClassDeclaration, MethodDeclaration } from 'ts-morph';
import { tsm } from './ts-morph.js';
import type { Frame, ScriptContext } from './context.js';
import { inlineFunction, record } from './calls.js';
import { classNear } from './imports.js';
import { methodFromText, type FunctionLike, type SourceInfo } from './source.js';
import type { SValue } from './values.js';

/** Methods read from runtime text, with the class they belong to (the text's wrapper class is anonymous). */
const owners = new WeakMap<MethodDeclaration, string>();

export function superCall(ctx: ScriptContext, f: Frame, name: string, args: SValue[], at: TsNode): SValue {
  const mod = f.mod;
  const method = at.getFirstAncestor((n): n is MethodDeclaration => tsm().Node.isMethodDeclaration(n));
  if (!mod || !method) throw f.src.error(at, "'super' is only available in methods of a module class");
  const cls = method.getParent();
  const typedClass = f.src.typed && tsm().Node.isClassDeclaration(cls) ? cls : undefined;
  const owner = typedClass?.getName() ?? owners.get(method) ?? mod.methodOwner?.(method.getName())?.className;
  if (!owner || !mod.methodOwner) throw f.src.error(at, `super.${name}(): jit.script cannot tell which class this method belongs to`);
  const base = mod.methodOwner(name, owner);
  if (!base) throw f.src.error(at, `super.${name}(): no base class of ${owner} defines a method '${name}'`);
  if (base.library) {
    // A built-in layer's method (class MyLinear extends nn.Linear): recorded like a call to that layer.
    ctx.b.meta = { ...ctx.b.meta, scope: f.path };
    return record(ctx, f, { kind: 'module', module: mod, method: name, base: base.className }, args, f.path, at);
  }
  const key = `${base.className}.${name}@${f.path}`;
  if (f.stack.includes(key)) throw f.src.error(at, `${base.className}.${name} calls itself; recursion is not supported by jit.script`);
  const found = (typedClass && typedBase(f.src, typedClass, base.className, name)) || fromText(base.className, name, base.source);
  return inlineFunction(ctx, { ...f, src: found.src, stack: [...f.stack, key] }, found.decl, mod, args, at, f);
}

/** The base class's method in the source, following `extends` through this file and its imports. */
function typedBase(src: SourceInfo, cls: ClassDeclaration, className: string, name: string): { src: SourceInfo; decl: FunctionLike } | undefined {
  let cur: { src: SourceInfo; decl: ClassDeclaration } | undefined = { src, decl: cls };
  for (let depth = 0; cur && depth < 32; depth++) {
    const ext = cur.decl.getExtends()?.getExpression();
    if (!ext || !tsm().Node.isIdentifier(ext)) return undefined;
    cur = classNear(cur.src, ext.getText());
    const decl = cur?.decl.getInstanceMethod(name);
    if (cur && decl) return cur.decl.getName() === className ? { src: cur.src, decl } : undefined;
  }
  return undefined;
}

function fromText(className: string, name: string, text: string): { src: SourceInfo; decl: FunctionLike } {
  const { src, decl } = methodFromText(text, `${className}.${name} (runtime text)`);
  owners.set(decl, className);
  return { src, decl };
}
