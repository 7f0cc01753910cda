// The words jit.script uses for a construct it does not compile: a table from the ts-morph
// syntax kind to the phrase a TypeScript user knows ("'super' calls", "class expressions",
// "generators", "'delete'") and what to do instead. Invariant: no message built here contains
// a ts-morph kind name (`SuperKeyword`, `ClassExpression`, ...); a kind missing from the table
// is described by its source text, never by its kind name.

import { SyntaxKind, type Node as TsNode } from 'ts-morph';

const IGNORE = 'move this code into a method marked @jit.ignore (it then runs eagerly, outside the graph)';
const TOP = 'declare it at the top level of the file and call it';

/** kind → [what the user wrote, in their words, with its verb; what to do instead]. */
const CONSTRUCTS = new Map<SyntaxKind, readonly [string, string]>([
  // Expressions
  [SyntaxKind.ArrowFunction, ["arrow functions (closures) are", `inside compiled code they can capture mutable state: declare a function at the top level of the file, or a method, and call it`]],
  [SyntaxKind.FunctionExpression, ["function expressions (closures) are", `inside compiled code they can capture mutable state: declare a function at the top level of the file, or a method, and call it`]],
  [SyntaxKind.ClassExpression, ["class expressions are", 'declare the class at the top level of the file']],
  [SyntaxKind.AwaitExpression, ["'await' is", 'compiled code is synchronous: move the asynchronous work outside the model or into a method marked @jit.ignore']],
  [SyntaxKind.NewExpression, ["'new' inside compiled code is", 'create modules and tensors in the constructor and use them in forward']],
  [SyntaxKind.TemplateExpression, ["template strings are", 'compiled code computes tensors, not text: build the string outside the model or in a method marked @jit.ignore']],
  [SyntaxKind.TaggedTemplateExpression, ["tagged template strings are", IGNORE]],
  [SyntaxKind.DeleteExpression, ["'delete' is", 'objects in compiled code have a fixed set of fields: assign undefined, or keep the key out of the object']],
  [SyntaxKind.TypeOfExpression, ["'typeof' is", 'the types are known when compiling: branch on them outside the model, or use separate methods']],
  [SyntaxKind.VoidExpression, ["'void' expressions are", 'call the function as a statement instead']],
  [SyntaxKind.YieldExpression, ["generators ('yield') are", 'return an array of results instead']],
  [SyntaxKind.SpreadElement, ["spread ('...') is", 'pass the arguments (or list the elements) one by one']],
  [SyntaxKind.SpreadAssignment, ["spread ('...') in an object literal is", 'write name: value pairs']],
  [SyntaxKind.SuperKeyword, ["'super' calls and 'super' property reads are", "copy the parent's computation into this method, or give it its own method name in the parent and call this.thatName()"]],
  [SyntaxKind.ImportKeyword, ["dynamic 'import()' is", 'import at the top of the file']],
  [SyntaxKind.MetaProperty, ["'new.target' and 'import.meta' are", 'read the value outside the model and store it in a field in the constructor']],
  [SyntaxKind.RegularExpressionLiteral, ["regular expressions are", IGNORE]],
  [SyntaxKind.BigIntLiteral, ["BigInt literals ('10n') are", 'use an ordinary number']],
  [SyntaxKind.OmittedExpression, ["holes in array literals ('[a, , b]') are", 'write every element']],
  [SyntaxKind.CommaListExpression, ["the comma operator is", 'write the expressions as separate statements']],
  [SyntaxKind.JsxElement, ["JSX is", IGNORE]],
  [SyntaxKind.JsxSelfClosingElement, ["JSX is", IGNORE]],
  [SyntaxKind.JsxFragment, ["JSX is", IGNORE]],
  [SyntaxKind.PrivateIdentifier, ["private '#fields' and '#methods' are", "use an ordinary (or 'private') field or method"]],
  [SyntaxKind.ObjectLiteralExpression, ["this object literal is", 'write name: value pairs']],
  [SyntaxKind.ArrayLiteralExpression, ["this array literal is", 'list the elements one by one']],
  // Members of object literals
  [SyntaxKind.MethodDeclaration, ["methods in an object literal are", 'write name: value pairs and declare the function at the top level of the file']],
  [SyntaxKind.GetAccessor, ["getters in an object literal are", 'write name: value pairs']],
  [SyntaxKind.SetAccessor, ["setters in an object literal are", 'write name: value pairs']],
  // Statements
  [SyntaxKind.TryStatement, ["'try' statements are", 'move the code that needs try/catch into a method marked @jit.ignore, outside the compiled graph']],
  [SyntaxKind.ThrowStatement, ["'throw' statements reached in compiled code are", 'jit.script cannot raise at run time: check the condition outside the model, or move it into a method marked @jit.ignore (or @jit.unused)']],
  [SyntaxKind.ClassDeclaration, ["class declarations inside a compiled method are", 'declare the class at the top level of the file']],
  [SyntaxKind.FunctionDeclaration, ["nested function declarations (they can capture mutable state) are", TOP]],
  [SyntaxKind.ForInStatement, ["'for ... in' is", "iterate with 'for ... of' over an array or a ModuleList"]],
  [SyntaxKind.LabeledStatement, ["labelled statements are", 'restructure the loop without a label (use a flag variable)']],
  [SyntaxKind.WithStatement, ["'with' statements are", 'name the object explicitly']],
  [SyntaxKind.DebuggerStatement, ["'debugger' statements are", 'remove it, or debug the eager model (it runs the same code)']],
  [SyntaxKind.EnumDeclaration, ["enum declarations inside a compiled method are", 'declare it at the top level of the file']],
  [SyntaxKind.InterfaceDeclaration, ["interface declarations inside a compiled method are", 'declare it at the top level of the file']],
  [SyntaxKind.TypeAliasDeclaration, ["type declarations inside a compiled method are", 'declare it at the top level of the file']],
  [SyntaxKind.ModuleDeclaration, ["namespace declarations inside a compiled method are", 'declare it at the top level of the file']],
  [SyntaxKind.ImportDeclaration, ["import declarations inside a compiled method are", 'import at the top of the file']],
]);

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
  const known = CONSTRUCTS.get(node.getKind());
  if (known) return `${known[0]} not supported by jit.script; ${known[1]}`;
  return `this construct ('${quote(node)}') is not supported by jit.script; ${IGNORE}`;
}

/** What `node` is, in the user's words: its table phrase without the verb, else a quote of its text. */
export function constructName(node: TsNode): string {
  const known = CONSTRUCTS.get(node.getKind());
  return known ? known[0].replace(/ (is|are)$/, '') : `'${quote(node)}'`;
}

/** Matches a ts-morph kind name (what a message must never show a user). */
export const KIND_NAME = /\b[A-Z][A-Za-z]*(Keyword|Expression|Statement|Declaration|Literal|Element|Assignment|Token|Identifier|Accessor|Property)\b/;
