// Node's thread host for the WebAssembly kernels (installed by the Node entry point, index.ts;
// the browser entry never imports this file, so its bundle names no Node built-in): workers are
// worker_threads running threads.ts's WORKER_PROGRAM, unref'd so they never keep the process
// alive, and the core count is os.availableParallelism().

import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { WORKER_PROGRAM, type ThreadHost } from './threads.js';

const SOURCE = `(${WORKER_PROGRAM})(require('node:worker_threads').workerData);`;

export const nodeThreadHost: ThreadHost = {
  spawn(data) {
    new Worker(SOURCE, { eval: true, workerData: data }).unref();
  },
  cores: availableParallelism(),
};
