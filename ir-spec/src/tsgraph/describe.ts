// Node descriptions for error messages, from the file's own numbering (`%5 = relu(%3)`), so a
// message points at the ids a user sees in the header. Invariant: total and bounded — any op
// name or attribute value gives a one-line description of limited length.

/** A short text form of a node for messages: `%5, %6 = op(%3, none) {attrs}`. */
export function describeNode(op: string, inputs: readonly (number | null | string)[], outputs: readonly (number | string)[], attrs?: unknown): string {
  const name = (v: number | null | string) => (v === null ? 'none' : `%${v}`);
  const list = (vs: readonly (number | null | string)[]) =>
    vs.length > 8 ? `${vs.slice(0, 8).map(name).join(', ')}, ... (${vs.length} in all)` : vs.map(name).join(', ');
  const lhs = outputs.length ? `${list(outputs)} = ` : '';
  let attrText = '';
  if (attrs && typeof attrs === 'object' && Object.keys(attrs).length) {
    let s: string;
    try { s = JSON.stringify(attrs); } catch { s = '{...}'; }
    attrText = ` ${s.length > 120 ? `${s.slice(0, 117)}...` : s}`;
  }
  const opText = op.length > 60 ? `${op.slice(0, 57)}...` : op;
  return `${lhs}${JSON.stringify(opText).slice(1, -1)}(${list(inputs)})${attrText}`;
}
