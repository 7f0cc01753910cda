// Types of end-to-end.mjs for TypeScript importers (tests); the example itself is plain JS.

export interface RunDemoOptions {
  /** Print training progress and the results (default true). */
  progress?: boolean;
  /** Folder that receives digits.tsgraph (default '.'). */
  out?: string;
  epochs?: number;
  /** Timed runs per forward; medians are reported (default 5). */
  runs?: number;
  /** Also run on WebGPU when the file has WGSL kernels and an adapter exists (default true). */
  webgpu?: boolean;
  log?: { write(s: string): unknown; isTTY?: boolean };
}
export interface BackendFigures { identical: number; maxAbsDiff: number; worstRelDiff: number; ms: number }
/** emulated: the adapter is a fallback (SwiftShader, a CPU emulation); adapter: its description. */
export type WebGpuFigures = ({ status: 'ran'; emulated: boolean; adapter: string } & BackendFigures) | { status: 'skipped'; reason: string };
export interface DemoResult {
  compiledWith: 'script' | 'trace';
  /** Absolute path of the saved digits.tsgraph. */
  path: string;
  fileBytes: number;
  images: number;
  /** Accuracy of the runtime's (CPU) predictions on the test images. */
  testAccuracy: number;
  eagerAccuracy: number;
  trainSeconds: number;
  cpu: BackendFigures;
  /** Median eager forward time (ms) of the whole test set. */
  eagerMs: number;
  /** eagerMs / cpu.ms. */
  speedup: number;
  webgpu: WebGpuFigures;
}

export function runDemo(options?: RunDemoOptions): Promise<DemoResult>;
