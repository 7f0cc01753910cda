// A small declarative argv parser: each command lists its flags; anything else is a UsageError.
// Invariant: parsing never reads the environment or files — it only maps argv to a typed record.

import { UsageError } from './errors.js';

export interface FlagSpec {
  /** `boolean` takes no value; `string` one value; `list` one value, repeatable. */
  readonly type: 'boolean' | 'string' | 'list';
  readonly short?: string;
}

export interface Parsed {
  readonly positionals: string[];
  readonly flags: Map<string, string[] | boolean>;
}

/**
 * Parses `argv` (after the command name) against `spec`. `-O0`/`-O1`/`-O2` are read as
 * `--opt-level N` when the spec has `opt-level`.
 */
export function parseArgs(command: string, argv: readonly string[], spec: Readonly<Record<string, FlagSpec>>): Parsed {
  const positionals: string[] = [];
  const flags = new Map<string, string[] | boolean>();
  const byShort = new Map(Object.entries(spec).filter(([, s]) => s.short).map(([n, s]) => [s.short!, n]));
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') { positionals.push(...argv.slice(i + 1)); break; }
    const level = /^-O([0-9])$/.exec(a);
    if (level && spec['opt-level']) { flags.set('opt-level', [level[1]]); continue; }
    if (!a.startsWith('-') || a === '-') { positionals.push(a); continue; }
    let name: string | undefined, value: string | undefined;
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      name = eq < 0 ? a.slice(2) : a.slice(2, eq);
      if (eq >= 0) value = a.slice(eq + 1);
    } else {
      name = byShort.get(a.slice(1, 2));
      if (name && a.length > 2) value = a.slice(2);
    }
    const s = name && Object.hasOwn(spec, name) ? spec[name] : undefined;
    if (!name || !s) throw new UsageError(`unknown option '${a}' for 'kiln ${command}'`, command);
    if (s.type === 'boolean') {
      if (value !== undefined) throw new UsageError(`option --${name} takes no value`, command);
      flags.set(name, true);
      continue;
    }
    if (value === undefined) {
      if (i + 1 >= argv.length) throw new UsageError(`option --${name} needs a value`, command);
      value = argv[++i];
    }
    const prev = flags.get(name);
    if (s.type === 'string' && Array.isArray(prev)) throw new UsageError(`option --${name} is given twice`, command);
    flags.set(name, [...(Array.isArray(prev) ? prev : []), value]);
  }
  return { positionals, flags };
}

/** The one value of a string flag, or undefined. */
export function flagString(p: Parsed, name: string): string | undefined {
  const v = p.flags.get(name);
  return Array.isArray(v) ? v[0] : undefined;
}

/** Every value of a list flag. */
export function flagList(p: Parsed, name: string): string[] {
  const v = p.flags.get(name);
  return Array.isArray(v) ? v : [];
}

export function flagBool(p: Parsed, name: string): boolean {
  return p.flags.get(name) === true;
}
