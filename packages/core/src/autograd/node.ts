// One recorded op in the autograd tape. Invariant: `edges[i]` is where the gradient of input i
// goes, frozen at the time the op ran (a later in-place op on that input does not re-route it),
// and each saved tensor is checked against the version it had when saved.

import type { GradDef, OpDef, TensorType } from '@kiln/ir-spec';
import type { Tensor } from '../tensor.js';

export type Edge = { node: Node; index: number } | { leaf: Tensor } | null;

export type GradHook = (grad: Tensor) => Tensor | void;

/** What a node needs from its op entry. Custom nodes (utils.checkpoint) carry a def of their
 * own with `saveInputs` and a `backwardFn`, since they are not registered ops. */
export type NodeDef = Pick<OpDef, 'name' | 'grad'>;

/** A custom node's backward: gradients of its outputs (null = zero) and its saved inputs
 * (version-checked) → one gradient per input edge. Runs with grad mode on iff createGraph. */
export type BackwardFn = (gradOutputs: readonly (Tensor | null)[], savedInputs: readonly (Tensor | undefined)[]) => (Tensor | null)[];

interface Saved { tensor: Tensor; version: number }

let sequence = 0;

export class Node {
  readonly seq = sequence++;
  /** Saved inputs/outputs by position; `undefined` where the rule does not need them. */
  private savedInputs: (Saved | undefined)[];
  private savedOutputs: (Saved | undefined)[];
  released = false;
  /** Hooks on this node's outputs (tensor hooks of non-leaf tensors), by output index. */
  readonly outputHooks: GradHook[][] = [];
  /** Set on custom nodes: runs instead of the op's gradient rule. */
  backwardFn: BackwardFn | null = null;
  /** Set on custom nodes: called once release() has dropped the saved tensors (jit.compile hands their arrays back to its runtime model). */
  onRelease: (() => void) | null = null;

  constructor(
    readonly def: NodeDef,
    readonly attrs: unknown,
    readonly edges: Edge[],
    readonly inputTypes: (TensorType | null)[],
    readonly outputTypes: TensorType[],
    inputs: readonly (Tensor | null)[],
    outputs: readonly Tensor[],
  ) {
    const grad = def.grad as GradDef<unknown>;
    this.savedInputs = inputs.map((t, i) => (t && grad.saveInputs?.includes(i) ? save(t) : undefined));
    this.savedOutputs = outputs.map((t, i) => (grad.saveOutputs?.includes(i) ? save(t) : undefined));
  }

  get name(): string { return `${this.def.name}Backward`; }

  /** Re-points a saved output to the tensor that now holds it (used by in-place ops). */
  resaveOutput(i: number, t: Tensor): void {
    if (this.savedOutputs[i]) this.savedOutputs[i] = save(t);
  }

  /** Replaces saved input `t` (about to be overwritten in place) by a snapshot of its old value. */
  resaveInput(t: Tensor, snapshot: () => Tensor): void {
    this.savedInputs = this.savedInputs.map((s) => (s && s.tensor === t ? save(snapshot()) : s));
  }

  unpack(): { inputs: (Tensor | undefined)[]; outputs: (Tensor | undefined)[] } {
    if (this.released) {
      throw new Error(
        `Trying to backward through the graph a second time (through ${this.name}): its saved tensors were freed ` +
        'after the first backward. Pass { retainGraph: true } to the first backward() or autograd.grad() if you need to go through it again.');
    }
    const check = (s: Saved | undefined, what: string) => {
      if (s && s.tensor._version !== s.version) {
        throw new Error(
          `one of the tensors needed for gradient computation has been modified by an in-place operation: ` +
          `${what} of ${this.def.name} (shape [${s.tensor.shape.join(',')}]) is at version ${s.tensor._version}; expected version ${s.version}. ` +
          'Use the out-of-place op (without the trailing _) or clone() the tensor before modifying it.');
      }
      return s?.tensor;
    };
    return {
      inputs: this.savedInputs.map((s, i) => check(s, `input ${i}`)),
      outputs: this.savedOutputs.map((s, i) => check(s, `output ${i}`)),
    };
  }

  /** The distinct tensors this node keeps for backward (none once released). */
  savedTensors(): Tensor[] {
    const out = new Set<Tensor>();
    for (const s of [...this.savedInputs, ...this.savedOutputs]) if (s) out.add(s.tensor);
    return [...out];
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.savedInputs = [];
    this.savedOutputs = [];
    const done = this.onRelease;
    this.onRelease = null;
    done?.();
  }
}

function save(t: Tensor): Saved {
  if (t.isInference) {
    throw new Error('Inference tensors cannot be saved for backward: this tensor was made inside inferenceMode(). Make it outside inferenceMode, or clone() it there first.');
  }
  return { tensor: t, version: t._version };
}
