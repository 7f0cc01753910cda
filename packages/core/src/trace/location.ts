// The user's source location of the current call: the first stack frame that is not inside
// Kiln itself (its packages' src/ or dist/) nor Node internals. Tracing only: reading a stack
// costs microseconds, so eager code never calls this.

const INTERNAL = [/[\\/](ir-spec|runtime|compiler|packages[\\/](core|kiln|cli))[\\/](src|dist)[\\/]/, /node:internal/, /[\\/]node_modules[\\/]/];

/** `file:line:col` of the innermost user frame, or undefined when none is found. */
export function userLocation(): string | undefined {
  // V8's stack limit (default 10) is not in the DOM/ES typings; library frames alone can exceed it.
  const V8Error = Error as ErrorConstructor & { stackTraceLimit?: number };
  const limit = V8Error.stackTraceLimit;
  V8Error.stackTraceLimit = 64;
  const stack = new Error().stack ?? '';
  V8Error.stackTraceLimit = limit;
  for (const line of stack.split('\n').slice(1)) {
    const m = /\(?((?:file:\/\/)?[^\s()]+):(\d+):(\d+)\)?\s*$/.exec(line.trim());
    if (!m) continue;
    const file = m[1].replace(/^file:\/\//, '').replace(/\?.*$/, ''); // bundlers may add ?query
    if (INTERNAL.some((re) => re.test(file))) continue;
    return `${file}:${m[2]}:${m[3]}`;
  }
  return undefined;
}
