// Types of train.mjs for TypeScript importers (tests, later tooling); the example itself is plain JS.
import type { nn } from 'kiln';

export interface DigitsData { x: Float32Array; y: Int32Array; n: number }
export interface EpochRecord { epoch: number; loss: number; accuracy: number; seconds: number }
export interface TrainDigitsOptions {
  epochs?: number;
  batchSize?: number;
  lr?: number;
  /** Seeds weight init, dropout and the shuffles; default DEFAULT_SEED. */
  seed?: number;
  csv?: string;
  progress?: boolean;
  out?: { write(s: string): unknown; isTTY?: boolean };
}
export interface TrainDigitsResult {
  /** Fraction of the 360 test images classified correctly. */
  testAccuracy: number;
  trainAccuracy: number;
  trainLoss: number;
  /** Wall time of the whole run (loading, training, evaluation). */
  seconds: number;
  epochs: number;
  history: EpochRecord[];
  /** The trained network (in eval mode). */
  model: nn.Sequential;
}

/** The seed trainDigits uses by default (see train.mjs for why this one). */
export const DEFAULT_SEED: number;
export function loadDigits(path?: string): DigitsData;
export function digitsModel(): nn.Sequential;
export function trainDigits(options?: TrainDigitsOptions): TrainDigitsResult;
/** True when the module at `url` (its `import.meta.url`) is the script node was started with. */
export function isMain(url: string): boolean;
