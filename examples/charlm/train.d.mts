// Types of train.mjs for TypeScript importers (tests); the example itself is plain JS.
import type { nn, Tensor, Generator } from 'kiln';

export interface TrainCharLMOptions {
  steps?: number;
  seed?: number;
  batchSize?: number;
  /** Characters sampled after the prompt, eagerly and from the saved file. */
  sampleChars?: number;
  /** Folder for charlm.tsgraph (default: a new temporary folder). */
  out?: string;
  log?: (s: string) => void;
}
export interface TrainCharLMResult {
  model: CharLM;
  vocab: string[];
  losses: number[];
  eagerSample: string;
  fileSample: string;
  trainSeconds: number;
  seconds: number;
  path: string;
}
export declare class CharLM extends nn.Module {
  constructor(vocabSize: number, opts?: { dModel?: number; nhead?: number; layers?: number; blockSize?: number });
  readonly blockSize: number;
  forward(tokens: Tensor): Tensor;
}
export declare function encodeText(text: string): { vocab: string[]; codes: Int32Array };
export declare function sampleRow(p: ArrayLike<number>, gen: Generator): number;
export declare function trainCharLM(o?: TrainCharLMOptions): Promise<TrainCharLMResult>;
