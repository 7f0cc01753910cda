// Every optimization pass, one per file (file name = pass name = CLI name = golden folder).
export { freeze } from './freeze.js';
export { eliminateDeadCode } from './eliminate-dead-code.js';
export { eliminateCommonSubexpressions } from './eliminate-common-subexpressions.js';
export { foldConstants, FOLD_LIMIT } from './fold-constants.js';
export { canonicalize, RULES, MAX_ROUNDS } from './canonicalize.js';
export { removeDropout } from './remove-dropout.js';
export { foldConvBn, foldBnParams } from './fold-conv-bn.js';
export { foldLinearBn } from './fold-linear-bn.js';
export { foldChannelAffine } from './fold-channel-affine.js';
export { fuseEpilogue } from './fuse-epilogue.js';
export { fuseElementwise, WEBGPU_DEFAULT_STORAGE_BUFFERS, type FuseElementwiseOptions } from './fuse-elementwise.js';
export { planMemory } from './plan-memory.js';
export { countNodes } from '../rewrite.js';
