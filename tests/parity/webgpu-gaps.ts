// Golden cases eager WebGPU cannot run yet (tests/webgpu-eager-parity.test.ts), each with the
// error it must fail with and why. The list only shrinks: a listed case that passes fails the test.

export const GPU_GAPS: Record<string, { readonly error: RegExp; readonly reason: string }> = {};
