// Binding of layer constructor arguments the way Python binds PyTorch's: positional values fill
// the parameters in PyTorch's order, and a trailing options object names any of them (the
// positional ones included: `new nn.Conv2d(3, 64, { kernelSize: 3 })`, `new nn.Dropout({ p: 0.5 })`).
// Invariant: every value a caller passes is either bound to a declared parameter and checked
// against its kind, or refused with an error naming the layer, the argument and the accepted
// forms — nothing is silently ignored (an unknown key, an extra positional, a boolean where a
// number goes, an options object where a size goes).

/** What a parameter accepts. `size` is an integer or an array of integers (a per-dim size). */
export type ArgKind =
  | 'int' | 'number' | 'bool' | 'size' | 'sizes' | 'sizeOrNone' | 'tensor'
  | { oneOf: readonly string[] };

/** One parameter: its name (camelCase of PyTorch's), its kind and whether null is allowed. */
export interface ArgSpec { name: string; kind: ArgKind; nullable?: boolean; also?: ArgKind }

/** A layer's signature: the parameters in PyTorch's positional order, how many are required,
 * and keyword-only parameters (accepted only inside the options object). */
export interface LayerSignature {
  layer: string;
  positional: readonly ArgSpec[];
  required?: number;
  keywordOnly?: readonly ArgSpec[];
}

function isOptionsObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v) || ArrayBuffer.isView(v)) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return `the array ${JSON.stringify(v)}`;
  if (isOptionsObject(v)) {
    let s: string;
    try { s = JSON.stringify(v); } catch { s = '{…}'; }
    return `the object ${s}`;
  }
  if (typeof v === 'object') return `a ${(v as object).constructor?.name ?? 'object'}`;
  if (typeof v === 'string') return `the string '${v}'`;
  return `${typeof v} ${String(v)}`;
}

function kindText(k: ArgKind): string {
  if (typeof k === 'object') return `one of ${k.oneOf.map((s) => `'${s}'`).join(', ')}`;
  switch (k) {
    case 'int': return 'an integer';
    case 'number': return 'a number';
    case 'bool': return 'a boolean (true or false)';
    case 'size': return 'an integer or an array of integers';
    case 'sizes': return 'an array of integers';
    case 'sizeOrNone': return 'an integer or an array of integers and nulls';
    case 'tensor': return 'a Tensor';
  }
}

function matches(k: ArgKind, v: unknown): boolean {
  if (typeof k === 'object') return typeof v === 'string' && k.oneOf.includes(v);
  switch (k) {
    case 'int': return Number.isInteger(v);
    case 'number': return typeof v === 'number' && !Number.isNaN(v);
    case 'bool': return typeof v === 'boolean';
    case 'size': return Number.isInteger(v) || (Array.isArray(v) && v.every((d) => Number.isInteger(d)));
    case 'sizes': return Array.isArray(v) && v.every((d) => Number.isInteger(d));
    case 'sizeOrNone': return Number.isInteger(v) || (Array.isArray(v) && v.every((d) => d === null || Number.isInteger(d)));
    // Structural, to keep this file free of the Tensor import cycle.
    case 'tensor': return typeof v === 'object' && v !== null && 'shape' in v && 'dtype' in v && '_storage' in v;
  }
}

/** `new nn.Conv2d(inChannels, outChannels, kernelSize, { stride, … })` — the forms an error lists. */
export function usage(sig: LayerSignature): string {
  const req = sig.positional.slice(0, sig.required ?? 0).map((a) => a.name);
  const opt = [...sig.positional.slice(sig.required ?? 0), ...(sig.keywordOnly ?? [])].map((a) => a.name);
  const call = (parts: string[]) => `new nn.${sig.layer}(${parts.join(', ')})`;
  const forms = [call([...req, ...(opt.length ? [`{ ${opt.join(', ')} }`] : [])])];
  if (req.length) forms.push(call([`{ ${[...req, ...opt].join(', ')} }`]));
  return forms.join(' or ');
}

/**
 * Binds `args` (a constructor's arguments, as passed) to `sig`'s parameters. Returns the bound
 * values by name (absent when not given); the layer applies its defaults and range checks.
 * @example const a = bindLayerArgs<{ p?: number; inplace?: boolean }>(DROPOUT, [{ p: 0.2 }]); // { p: 0.2 }
 */
export function bindLayerArgs<T>(sig: LayerSignature, args: readonly unknown[]): T {
  const { layer } = sig;
  const forms = () => `accepted forms: ${usage(sig)}`;
  let positional = [...args];
  // Trailing undefineds are "not given" (a default parameter passed through).
  while (positional.length && positional[positional.length - 1] === undefined) positional.pop();
  let opts: Record<string, unknown> = {};
  const last = positional[positional.length - 1];
  if (isOptionsObject(last)) { opts = last; positional = positional.slice(0, -1); }
  const all = [...sig.positional, ...(sig.keywordOnly ?? [])];
  const byName = new Map(all.map((a) => [a.name, a]));
  if (positional.length > sig.positional.length) {
    const names = sig.positional.map((a) => a.name).join(', ');
    throw new Error(`${layer}: takes at most ${sig.positional.length} positional argument(s) (${names}), got ${positional.length}; ${forms()}`);
  }
  const out: Record<string, unknown> = {};
  const check = (a: ArgSpec, v: unknown, where: string) => {
    if (v === null && a.nullable) return;
    if (matches(a.kind, v) || (a.also !== undefined && matches(a.also, v))) return;
    const want = [kindText(a.kind), ...(a.also !== undefined ? [kindText(a.also)] : []), ...(a.nullable ? ['null'] : [])].join(' or ');
    const hint = isOptionsObject(v) ? ' (an options object can only be the last argument)' : '';
    throw new Error(`${layer}: ${a.name} (${where}) must be ${want}, got ${describeValue(v)}${hint}; ${forms()}`);
  };
  positional.forEach((v, i) => {
    const a = sig.positional[i];
    if (v === undefined) return;
    check(a, v, `argument ${i + 1}`);
    out[a.name] = v;
  });
  for (const [k, v] of Object.entries(opts)) {
    const a = byName.get(k);
    if (!a) {
      const known = all.map((x) => x.name).join(', ');
      throw new Error(`${layer}: unknown option '${k}' (accepted: ${known || 'none'}); ${forms()}`);
    }
    if (v === undefined) continue;
    if (Object.prototype.hasOwnProperty.call(out, k)) {
      throw new Error(`${layer}: ${k} is given twice, as argument ${sig.positional.indexOf(a) + 1} and as option '${k}'; pass it once`);
    }
    check(a, v, `option '${k}'`);
    out[k] = v;
  }
  for (const a of sig.positional.slice(0, sig.required ?? 0)) {
    if (!Object.prototype.hasOwnProperty.call(out, a.name)) throw new Error(`${layer}: missing required argument ${a.name}; ${forms()}`);
  }
  return out as T;
}
