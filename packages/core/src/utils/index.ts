// utils — checkpointing and helpers (torch.utils).
export { checkpoint, checkpointSequential, type SequentialLayer } from './checkpoint.js';
