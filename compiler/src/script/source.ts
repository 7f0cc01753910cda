// Finding the source of a method or function: the model's `.ts` file when it is known (parsed
// with ts-morph, so the type checker can type parameters), else the runtime text of the
// function (`Function.prototype.toString`, e.g. code already transpiled to JS), wrapped so
// ts-morph parses it. Invariant: every node handed out belongs to a SourceInfo whose `place`
// maps it back to the user's file, line and column.

import type { Node as TsNode, Project, SyntaxKind, ArrowFunction, FunctionDeclaration, FunctionExpression, MethodDeclaration, SourceFile } from 'ts-morph';
import { tsm } from './ts-morph.js';
import { codeFrame, ScriptError } from './errors.js';
import { constructName } from './construct-names.js';

export type FunctionLike = MethodDeclaration | FunctionDeclaration | ArrowFunction | FunctionExpression;

/** One parsed source text and how its positions map to the user's file. */
export class SourceInfo {
  constructor(
    readonly file: SourceFile,
    /** The name shown in errors (a path, or `Class.method (runtime text)`). */
    readonly display: string,
    /** Lines added before the user's text by the wrapper (runtime text only). */
    readonly lineOffset: number,
    /** Whether this is the real `.ts` file (types from the checker are meaningful). */
    readonly typed: boolean,
    /** Whether this is Kiln library code (an nn.Module method the user's class inherits). */
    readonly library = false,
  ) {}

  /**
   * How well a place in this source points the user at their own code: their `.ts` file (2),
   * the runtime text of their method (1), library code (0). An error in an inlined callee is
   * re-reported at the caller's call site when the callee ranks lower (calls.ts).
   */
  get rank(): number { return this.library ? 0 : this.typed ? 2 : 1; }

  /** A ScriptError at `node`. */
  error(node: TsNode, reason: string): ScriptError {
    const sf = this.file;
    const { line, column } = sf.getLineAndColumnAtPos(node.getStart());
    const text = sf.getFullText().split(/\r?\n/).slice(this.lineOffset).join('\n');
    const l = line - this.lineOffset;
    return new ScriptError(reason, this.display, l, column, codeFrame(text, l, column));
  }

  /** A plain function declared at the top level of this file. */
  topFunction(name: string): FunctionDeclaration | undefined {
    return this.file.getFunction(name);
  }
}

let project: Project | undefined;
let counter = 0;
const files = new Map<string, SourceInfo>();

/** Whether a file system exists (Node); a browser page (the playground) parses in memory only. */
const HAS_FILE_SYSTEM = typeof (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node === 'string';

function getProject(): Project {
  project ??= new (tsm().Project)({
    useInMemoryFileSystem: !HAS_FILE_SYSTEM,
    skipAddingFilesFromTsConfig: true,
    skipFileDependencyResolution: true,
    compilerOptions: { strict: true, target: 99, noLib: false, allowJs: true, experimentalDecorators: false },
  });
  return project;
}

/** The parsed `.ts` file at `path` (cached per path). */
export function sourceAtPath(path: string): SourceInfo {
  const known = files.get(path);
  if (known) return known;
  const sf = getProject().addSourceFileAtPath(path);
  const info = new SourceInfo(sf, path, 0, true);
  files.set(path, info);
  return info;
}

/**
 * Makes `text` the source of `path`, as if the file held it (replacing what was read before):
 * a page with an editor and no file system passes `{ sourceFile: path }` to jit.script after this.
 * @example provideSource('/playground/model.ts', editor.text); jit.script(model, { sourceFile: '/playground/model.ts', inputs })
 */
export function provideSource(path: string, text: string): void {
  const sf = getProject().createSourceFile(path, text, { overwrite: true });
  files.set(path, new SourceInfo(sf, path, 0, true));
}

/** The SourceInfo that `node` belongs to (a helper from another file), else `fallback`. */
export function sourceOf(node: TsNode, fallback: SourceInfo): SourceInfo {
  const sf = node.getSourceFile();
  if (sf === fallback.file) return fallback;
  for (const info of files.values()) if (info.file === sf) return info;
  return fallback;
}

/** The method `name` of class `className` in `src`, if the file declares it. */
export function findMethod(src: SourceInfo, className: string, name: string): MethodDeclaration | undefined {
  const cls = src.file.getClass(className)
    ?? src.file.getDescendantsOfKind(tsm().SyntaxKind.ClassDeclaration).find((c) => c.getName() === className);
  return cls?.getInstanceMethod(name);
}

/** Parses a method's runtime text (`forward(x) { ... }`) as a class member. */
export function methodFromText(text: string, display: string, library = false): { src: SourceInfo; decl: MethodDeclaration } {
  const sf = getProject().createSourceFile(`__kiln_script_${counter++}.ts`, `class __KilnScript {\n${text}\n}\n`, { overwrite: true });
  const src = new SourceInfo(sf, display, 1, false, library);
  const member = sf.getClassOrThrow('__KilnScript').getMembers()[0];
  if (!member || !tsm().Node.isMethodDeclaration(member)) {
    throw new ScriptError(`cannot read the method text as a method declaration (it reads as ${member ? constructName(member) : 'nothing'}); ` +
      'declare it as an ordinary method `forward(x) { ... }`, or pass the .ts file with { sourceFile }', display, 1, 1, codeFrame(text, 1, 1));
  }
  return { src, decl: member };
}

/** Parses a function's runtime text (`function f(x) {...}` or `(x) => ...`). */
export function functionFromText(text: string, display: string): { src: SourceInfo; decl: FunctionLike } {
  const sf = getProject().createSourceFile(`__kiln_script_${counter++}.ts`, `const __kilnScript = (\n${text}\n);\n`, { overwrite: true });
  const src = new SourceInfo(sf, display, 1, false);
  const init = sf.getVariableDeclarationOrThrow('__kilnScript').getInitializer();
  const inner = init && tsm().Node.isParenthesizedExpression(init) ? init.getExpression() : init;
  if (inner && (tsm().Node.isArrowFunction(inner) || tsm().Node.isFunctionExpression(inner))) return { src, decl: inner };
  // A method shorthand's text (`forward(x) {...}`) is not an expression: read it as a method.
  return methodFromText(text, display);
}

/** The function declaration `name` or `const name = (...) => ...` at the top of `src`. */
export function findFunction(src: SourceInfo, name: string): FunctionLike | undefined {
  const fn = src.file.getFunction(name);
  if (fn) return fn;
  const v = src.file.getVariableDeclaration(name);
  const init = v?.getInitializer();
  if (init && (tsm().Node.isArrowFunction(init) || tsm().Node.isFunctionExpression(init))) return init;
  return undefined;
}
