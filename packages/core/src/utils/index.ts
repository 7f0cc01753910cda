// utils — checkpointing and helpers (torch.utils).
export { checkpoint, checkpointSequential, type SequentialLayer } from './checkpoint.js';
export * as data from './data.js';
