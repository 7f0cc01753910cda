// The one error type of the `.tsgraph` container. Invariant: reading a file either succeeds
// or throws a TsgraphError whose `code` says what is wrong and whose message names the place
// (byte offset, header path, tensor or node) and what the user can do about it.

/** Every way a `.tsgraph` file can be refused (see SPEC.md §13, "Errors"). */
export const TSGRAPH_ERROR_CODES = [
  'BAD_MAGIC',
  'UNSUPPORTED_VERSION',
  'TRUNCATED',
  'HEADER_TOO_LARGE',
  'BAD_JSON',
  'SCHEMA',
  'OFFSET_OUT_OF_RANGE',
  'OVERLAP',
  'SIZE_MISMATCH',
  'CHECKSUM_MISMATCH',
  'UNKNOWN_OP',
  'VERIFY',
] as const;

export type TsgraphErrorCode = typeof TSGRAPH_ERROR_CODES[number];

/**
 * A refused (or unwritable) `.tsgraph` file.
 *
 * @example
 * ```ts
 * try { decodeTsgraph(bytes); }
 * catch (e) { if (e instanceof TsgraphError && e.code === 'UNSUPPORTED_VERSION') console.error(e.message); }
 * ```
 */
export class TsgraphError extends Error {
  constructor(readonly code: TsgraphErrorCode, message: string, options?: { cause?: unknown }) {
    super(`${code}: ${message}`, options);
    this.name = 'TsgraphError';
  }
}
