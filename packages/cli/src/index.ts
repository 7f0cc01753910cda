// @kiln/cli: the `kiln` command (bin: dist/kiln.mjs, bundled from bin.ts) and its entry point
// for programs that want to run it in-process.
export { main, MAIN_HELP } from './main.js';
