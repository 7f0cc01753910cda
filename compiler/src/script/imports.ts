// Declarations the model's file imports from the user's other files: `import { block } from
// './helpers.js'` (aliases and default imports too, and re-exports `export { x } from`) resolve
// to the function or class declared in that `.ts` file, which is parsed like the model's own, so
// a helper is inlined and a base class's method read from its source. Only relative imports are
// followed (a package such as 'kiln' is the library, reached through the host). Invariant: a
// declaration found here is handed out with the SourceInfo of its own file, so its errors name
// that file.

import type { ts, ClassDeclaration, SourceFile } from 'ts-morph';
import { tsm } from './ts-morph.js';
import { findFunction, sourceAtPath, type FunctionLike, type SourceInfo } from './source.js';

export type Imported =
  | { readonly kind: 'function'; readonly src: SourceInfo; readonly decl: FunctionLike }
  | { readonly kind: 'class'; readonly src: SourceInfo; readonly decl: ClassDeclaration }
  /** `import * as ns from './file.js'` of a user file (not followed: import the functions by name). */
  | { readonly kind: 'namespace'; readonly spec: string };

/** What the local name `name` of `src` is imported as, followed to its declaration; undefined when not a relative import. */
export function importedDeclaration(src: SourceInfo, name: string): Imported | undefined {
  if (!src.typed) return undefined;
  for (const imp of src.file.getImportDeclarations()) {
    if (imp.isTypeOnly()) continue;
    const spec = imp.getModuleSpecifierValue();
    if (imp.getNamespaceImport()?.getText() === name) return resolveRelative(src.file, spec) ? { kind: 'namespace', spec } : undefined;
    let exported: string | undefined;
    if (imp.getDefaultImport()?.getText() === name) exported = 'default';
    for (const n of imp.getNamedImports()) {
      if ((n.getAliasNode()?.getText() ?? n.getName()) === name && !n.isTypeOnly()) exported = n.getName();
    }
    if (exported === undefined) continue;
    const file = resolveRelative(src.file, spec);
    return file ? exportedDeclaration(sourceAtPath(file), exported, 0) : undefined;
  }
  return undefined;
}

/** A class declared in `src` or imported into it, by its local name. */
export function classNear(src: SourceInfo, name: string): { src: SourceInfo; decl: ClassDeclaration } | undefined {
  const own = src.file.getClass(name);
  if (own) return { src, decl: own };
  const imp = importedDeclaration(src, name);
  return imp?.kind === 'class' ? imp : undefined;
}

/** The `.ts` file a relative module specifier names (`./helpers.js` is `./helpers.ts` in the source). */
function resolveRelative(from: SourceFile, spec: string): string | undefined {
  if (!spec.startsWith('./') && !spec.startsWith('../')) return undefined;
  const base = joinPath(from.getDirectoryPath(), spec);
  const stem = base.replace(/\.(m|c)?js$/, '');
  const candidates = [base, `${stem}.ts`, `${stem}.mts`, `${stem}.tsx`, `${base}.ts`, `${base}/index.ts`];
  return candidates.find((p) => /\.(m|c)?tsx?$/.test(p) && tsm().ts.sys.fileExists(p));
}

/** `dir` joined with a relative path (ts-morph's paths use '/'). */
function joinPath(dir: string, rel: string): string {
  const parts = dir.split('/');
  for (const p of rel.split('/')) {
    if (p === '..') parts.pop();
    else if (p !== '.' && p !== '') parts.push(p);
  }
  return parts.join('/');
}

function exportedDeclaration(src: SourceInfo, name: string, depth: number): Imported | undefined {
  if (depth > 8) return undefined;
  const sf = src.file;
  if (name === 'default') {
    const fn = sf.getFunctions().find((d) => d.isDefaultExport());
    if (fn) return { kind: 'function', src, decl: fn };
    const cls = sf.getClasses().find((d) => d.isDefaultExport());
    return cls ? { kind: 'class', src, decl: cls } : undefined;
  }
  const fn = findFunction(src, name);
  if (fn) return { kind: 'function', src, decl: fn };
  const cls = sf.getClass(name);
  if (cls) return { kind: 'class', src, decl: cls };
  for (const ex of sf.getExportDeclarations()) {
    const spec = ex.getModuleSpecifierValue();
    const named = ex.getNamedExports().find((n) => (n.getAliasNode()?.getText() ?? n.getName()) === name);
    if (!spec) {
      // `export { local as name }`: the local declaration (or what the file imports under that name).
      if (named && named.getName() !== name) return exportedDeclaration(src, named.getName(), depth + 1) ?? importedDeclaration(src, named.getName());
      if (named) return importedDeclaration(src, name);
      continue;
    }
    // `export { a } from` names what it re-exports; `export * from` may hold anything; `export * as ns` is not followed.
    if (ex.getNamespaceExport() || (!named && ex.hasNamedExports())) continue;
    const file = resolveRelative(sf, spec);
    if (!file) continue;
    const hit = exportedDeclaration(sourceAtPath(file), named ? named.getName() : name, depth + 1);
    if (hit) return hit;
  }
  return undefined;
}
