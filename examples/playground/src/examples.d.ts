// The example model files (build.mjs's EXAMPLES: examples/cli's two and models/*.ts), inlined as text by build.mjs.
declare module 'playground:examples' {
  const examples: readonly { readonly name: string; readonly file: string; readonly source: string }[];
  export default examples;
}
