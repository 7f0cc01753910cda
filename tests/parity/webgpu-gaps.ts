// Golden cases eager WebGPU cannot run yet (tests/webgpu-eager-parity.test.ts), each with the
// error it must fail with and why. The list only shrinks: a listed case that passes fails the test.

export const GPU_GAPS: Record<string, { readonly error: RegExp; readonly reason: string }> = {
  'indexing/index_bool_mask': {
    error: /op masked_select cannot run on 'webgpu': its output size \(nnz\) depends on the data/,
    reason: 'masked_select sizes its output by counting the mask, which eager mode cannot know without waiting for the GPU',
  },
};
