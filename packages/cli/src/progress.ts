// Stage-by-stage progress on stderr (stdout stays for results such as IR text or DOT), each
// stage with its wall time. Invariant: progress output never goes to stdout.

export class Progress {
  constructor(private readonly quiet = false) {}

  /** Runs `fn` as a named stage and reports its time (also when it throws). */
  async stage<T>(name: string, detail: string, fn: () => T | Promise<T>): Promise<T> {
    const t0 = performance.now();
    const r = await fn();
    this.report(name, performance.now() - t0, detail);
    return r;
  }

  /** Reports a stage timed elsewhere (the optimizer's per-pass records). */
  report(name: string, ms: number, detail = ''): void {
    if (this.quiet) return;
    process.stderr.write(`  ${name.padEnd(34)} ${ms.toFixed(1).padStart(8)} ms${detail ? `  ${detail}` : ''}\n`);
  }
}
