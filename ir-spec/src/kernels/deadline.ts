// Kernel deadlines: how one long kernel call stops when its run's time is up. The runtime sets a
// deadline around each node it dispatches under a time limit (setKernelDeadline); a kernel whose
// cost is not linear in its tensors (products, convolutions, pooling windows) reports the work of
// each chunk it finishes with kernelTick, which reads the clock once per TICK_WORK multiply-adds
// and, past the deadline, throws KernelDeadline (the runtime turns it into a TIME_LIMIT error
// naming the node). Invariant: no deadline set (eager mode, createModel without maxRunMs) costs a
// kernel one subtraction and one comparison per chunk and never reads the clock; a chunk between
// two ticks is at most a few million multiply-adds (the loops that tick say how they cut), so a
// kernel stops within a few milliseconds of its deadline even at JavaScript's scalar rate.

/** Multiply-adds between two readings of the clock. */
const TICK_WORK = 1 << 22;

let deadline = Infinity;
/** Work left before the clock is read again (Infinity while no deadline is set). */
let untilCheck = Infinity;
/** Kernel calls stopped by their deadline so far (for tests and stats). */
let interrupts = 0;

/** Thrown by kernelTick past the deadline: the kernel stopped part way, its output is garbage. */
export class KernelDeadline extends Error {
  constructor(readonly at: number, readonly now: number) {
    super(`the kernel was interrupted ${Math.round(now - at)} ms past its deadline`);
    this.name = 'KernelDeadline';
  }
}

/**
 * Sets the `performance.now()` time past which ticking kernels throw (Infinity: none). Returns
 * the previous deadline, for the caller to restore.
 */
export function setKernelDeadline(at: number): number {
  const was = deadline;
  deadline = at;
  untilCheck = at === Infinity ? Infinity : 0;
  return was;
}

/** Whether a deadline is set: kernels then cut their work into chunks they can stop between. */
export function kernelDeadlineSet(): boolean {
  return deadline !== Infinity;
}

/** Whether the deadline has passed (reads the clock; false when none is set). */
export function kernelDeadlinePassed(): boolean {
  return deadline !== Infinity && performance.now() > deadline;
}

/** Throws KernelDeadline now (for a kernel that saw kernelDeadlinePassed itself: a split round). */
export function kernelInterrupted(): never {
  interrupts++;
  throw new KernelDeadline(deadline, performance.now());
}

/** Reports `work` multiply-adds done: throws KernelDeadline once the deadline has passed. */
export function kernelTick(work: number): void {
  if ((untilCheck -= work) > 0) return;
  untilCheck = TICK_WORK;
  if (performance.now() > deadline) kernelInterrupted();
}

/** Kernel calls interrupted by their deadline so far in this process. */
export function kernelInterrupts(): number {
  return interrupts;
}
