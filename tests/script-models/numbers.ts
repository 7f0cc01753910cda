// Test models for jit.script: run-time numbers as tensor operands (`to_tensor`): a forward
// argument, a number computed from .item(), and a size from x.shape in tensor arithmetic.
import { nn, type Tensor } from 'kiln';

/** `x.mul(scale).add(n)` with both numbers forward arguments. */
export class ScaleShift extends nn.Module {
  forward(x: Tensor, scale: number, n: number): Tensor {
    return x.mul(scale).add(n).sub(n * 2);
  }
}

/** A mean by hand: the sum divided by the batch size, and a number read with .item(). */
export class ManualMean extends nn.Module {
  forward(x: Tensor): Tensor {
    const total = x.sum();
    const m = total.div(x.shape[0]);
    const peak = x.abs().max().item();
    return x.sub(m).div(peak + 1).add(x.shape[0]);
  }
}
