// How the CLI classifies failures. Invariant: every error reaching main() maps to exactly one
// exit code — 1 for what the user can fix (bad flags, a model file that does not compile, a
// corrupt .tsgraph), 2 for everything else (a bug in Kiln) — and only --verbose shows a stack.

/** Something the user can fix; printed as its message alone, exit code 1. */
export class UserError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'UserError';
  }
}

/** Bad command line: printed with the command's usage, exit code 1. */
export class UsageError extends UserError {
  constructor(message: string, readonly command?: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** Errors of the frontends and the file format that point at the user's model or file. */
const USER_ERROR_NAMES = new Set(['ScriptError', 'TraceError', 'TraceCheckError', 'TsgraphError', 'RuntimeError', 'TypeStringError', 'DimError']);

/** Whether `e` is the user's to fix (exit 1) rather than an internal error (exit 2). */
export function isUserError(e: unknown): boolean {
  return e instanceof UserError || (e instanceof Error && USER_ERROR_NAMES.has(e.name));
}
