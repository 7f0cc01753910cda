// The words jit.script uses for a construct it does not compile: a table from the ts-morph
// syntax kind to the phrase a TypeScript user knows ("'super' calls", "class expressions",
// "generators", "'delete'") and what to do instead. Invariant: no message built here contains
// a ts-morph kind name (`SuperKeyword`, `ClassExpression`, ...); a kind missing from the table
// is described by its source text, never by its kind name.

import type { SyntaxKind, Node as TsNode } from 'ts-morph';
import { tsm } from './ts-morph.js';

const IGNORE = 'move this code into a method marked @jit.ignore (it then runs eagerly, outside the graph)';
const TOP = 'declare it at the top level of the file and call it';

let table: ReadonlyMap<SyntaxKind, readonly [string, string]> | undefined;

/** kind → [what the user wrote, in their words, with its verb; what to do instead] (built at first use: ts-morph loads lazily). */
function constructs(): ReadonlyMap<SyntaxKind, readonly [string, string]> {
  if (table) return table;
  const K = tsm().SyntaxKind;
  return (table = new Map<SyntaxKind, readonly [string, string]>([
    // Expressions
    [K.ArrowFunction, ["arrow functions (closures) are", `inside compiled code they can capture mutable state: declare a function at the top level of the file, or a method, and call it`]],
    [K.FunctionExpression, ["function expressions (closures) are", `inside compiled code they can capture mutable state: declare a function at the top level of the file, or a method, and call it`]],
    [K.ClassExpression, ["class expressions are", 'declare the class at the top level of the file']],
    [K.AwaitExpression, ["'await' is", 'compiled code is synchronous: move the asynchronous work outside the model or into a method marked @jit.ignore']],
    [K.NewExpression, ["'new' inside compiled code is", 'create modules and tensors in the constructor and use them in forward']],
    [K.TemplateExpression, ["template strings are", 'compiled code computes tensors, not text: build the string outside the model or in a method marked @jit.ignore']],
    [K.TaggedTemplateExpression, ["tagged template strings are", IGNORE]],
    [K.DeleteExpression, ["'delete' is", 'objects in compiled code have a fixed set of fields: assign undefined, or keep the key out of the object']],
    [K.TypeOfExpression, ["'typeof' is", 'the types are known when compiling: branch on them outside the model, or use separate methods']],
    [K.VoidExpression, ["'void' expressions are", 'call the function as a statement instead']],
    [K.YieldExpression, ["generators ('yield') are", 'return an array of results instead']],
    [K.SpreadElement, ["spread ('...') is", 'pass the arguments (or list the elements) one by one']],
    [K.SpreadAssignment, ["spread ('...') in an object literal is", 'write name: value pairs']],
    [K.SuperKeyword, ["'super' calls and 'super' property reads are", "copy the parent's computation into this method, or give it its own method name in the parent and call this.thatName()"]],
    [K.ImportKeyword, ["dynamic 'import()' is", 'import at the top of the file']],
    [K.MetaProperty, ["'new.target' and 'import.meta' are", 'read the value outside the model and store it in a field in the constructor']],
    [K.RegularExpressionLiteral, ["regular expressions are", IGNORE]],
    [K.BigIntLiteral, ["BigInt literals ('10n') are", 'use an ordinary number']],
    [K.OmittedExpression, ["holes in array literals ('[a, , b]') are", 'write every element']],
    [K.CommaListExpression, ["the comma operator is", 'write the expressions as separate statements']],
    [K.JsxElement, ["JSX is", IGNORE]],
    [K.JsxSelfClosingElement, ["JSX is", IGNORE]],
    [K.JsxFragment, ["JSX is", IGNORE]],
    [K.PrivateIdentifier, ["private '#fields' and '#methods' are", "use an ordinary (or 'private') field or method"]],
    [K.ObjectLiteralExpression, ["this object literal is", 'write name: value pairs']],
    [K.ArrayLiteralExpression, ["this array literal is", 'list the elements one by one']],
    // Members of object literals
    [K.MethodDeclaration, ["methods in an object literal are", 'write name: value pairs and declare the function at the top level of the file']],
    [K.GetAccessor, ["getters in an object literal are", 'write name: value pairs']],
    [K.SetAccessor, ["setters in an object literal are", 'write name: value pairs']],
    // Statements
    [K.TryStatement, ["'try' statements are", 'move the code that needs try/catch into a method marked @jit.ignore, outside the compiled graph']],
    [K.ThrowStatement, ["'throw' statements reached in compiled code are", 'jit.script cannot raise at run time: check the condition outside the model, or move it into a method marked @jit.ignore (or @jit.unused)']],
    [K.ClassDeclaration, ["class declarations inside a compiled method are", 'declare the class at the top level of the file']],
    [K.FunctionDeclaration, ["nested function declarations (they can capture mutable state) are", TOP]],
    [K.ForInStatement, ["'for ... in' is", "iterate with 'for ... of' over an array or a ModuleList"]],
    [K.LabeledStatement, ["labelled statements are", 'restructure the loop without a label (use a flag variable)']],
    [K.WithStatement, ["'with' statements are", 'name the object explicitly']],
    [K.DebuggerStatement, ["'debugger' statements are", 'remove it, or debug the eager model (it runs the same code)']],
    [K.EnumDeclaration, ["enum declarations inside a compiled method are", 'declare it at the top level of the file']],
    [K.InterfaceDeclaration, ["interface declarations inside a compiled method are", 'declare it at the top level of the file']],
    [K.TypeAliasDeclaration, ["type declarations inside a compiled method are", 'declare it at the top level of the file']],
    [K.ModuleDeclaration, ["namespace declarations inside a compiled method are", 'declare it at the top level of the file']],
    [K.ImportDeclaration, ["import declarations inside a compiled method are", 'import at the top of the file']],
  ]));
}

/** A short quote of the source of `node` (one line, at most 40 characters). */
function quote(node: TsNode): string {
  const text = node.getText().replace(/\s+/g, ' ').trim();
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

/**
 * The message for a construct jit.script does not compile, in the user's words, with what to do.
 * @example
 * unsupportedConstruct(node) // "'delete' is not supported by jit.script; objects in compiled code have ..."
 */
export function unsupportedConstruct(node: TsNode): string {
  const known = constructs().get(node.getKind());
  if (known) return `${known[0]} not supported by jit.script; ${known[1]}`;
  return `this construct ('${quote(node)}') is not supported by jit.script; ${IGNORE}`;
}

/** What `node` is, in the user's words: its table phrase without the verb, else a quote of its text. */
export function constructName(node: TsNode): string {
  const known = constructs().get(node.getKind());
  return known ? known[0].replace(/ (is|are)$/, '') : `'${quote(node)}'`;
}

/** Matches a ts-morph kind name (what a message must never show a user). */
export const KIND_NAME = /\b[A-Z][A-Za-z]*(Keyword|Expression|Statement|Declaration|Literal|Element|Assignment|Token|Identifier|Accessor|Property)\b/;
