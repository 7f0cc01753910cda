// Test models for jit.script coverage (issue 12, part B): arrow functions over static arrays,
// `for` loops with any step, arrays built in loops, branches whose shapes differ under a
// static condition, and recursion over data known when compiling.
import { nn, F, cat, stack, type Tensor } from 'kiln';

/** map / forEach / reduce / filter over arrays of tensors, with arrow-function callbacks. */
export class ArrayMethods extends nn.Module {
  forward(x: Tensor): Tensor {
    const parts = [x, x.mul(2), x.neg()].map((t) => t.relu());
    const total = parts.reduce((acc, t) => acc.add(t));
    const scaled = parts.map((t, i) => t.mul(i + 1));
    const seeded = scaled.reduce((acc: Tensor, t: Tensor) => acc.sub(t), x);
    const wide = [x, x.sum(1, { keepdim: true }), x.abs()].filter((t) => t.shape[1] > 1);
    const out: Tensor[] = [];
    wide.forEach((t, i) => {
      out.push(t.add(i));
    });
    return cat([total, seeded, cat(out, 1)], 1);
  }
}

/** some, every, find, findIndex and reduceRight with static predicates (shapes); x.shape.reduce for the element count. */
export class ArrayQueries extends nn.Module {
  forward(x: Tensor): Tensor {
    const parts = [x, x.sum(1, { keepdim: true }), x.mul(3)];
    const narrow = parts.find((t) => t.shape[1] === 1);
    const firstWide = parts.findIndex((t) => t.shape[1] > 1);
    const anyNarrow = parts.some((t) => t.shape[1] === 1);
    const allTwoD = parts.every((t) => t.ndim === 2);
    const back = parts.filter((t) => t.shape[1] > 1).reduceRight((acc, t) => acc.sub(t.mul(0.5)));
    const numel = x.shape.reduce((a, b) => a * b, 1);
    let y = back.add(firstWide).div(numel);
    if (anyNarrow && allTwoD && narrow !== undefined) y = y.mul(narrow);
    return y;
  }
}

/** An array of submodules mapped over, and a local arrow function called twice. */
export class ModuleArray extends nn.Module {
  l1 = new nn.Linear(4, 3);
  l2 = new nn.Linear(4, 3);
  scale = 0.5;
  forward(x: Tensor): Tensor {
    const act = (t: Tensor): Tensor => F.gelu(t).mul(this.scale);
    const ys = [this.l1, this.l2].map((l) => act(l.forward(x)));
    const square = function (t: Tensor): Tensor { return t.mul(t); };
    return stack(ys.map((y) => square(y)), 0).sum(0);
  }
}

/**
 * Closures read captured variables where they are called (after a reassignment, inside a
 * data-dependent branch, in a loop region, past a shadowing declaration) and may update them
 * in straight-line code and unrolled loops.
 */
export class ClosureState extends nn.Module {
  forward(x: Tensor, n: number): Tensor {
    let h = x;
    const addH = (t: Tensor) => t.add(h);
    h = h.mul(3);
    let steps = 0;
    const step = () => { steps += 1; h = h.tanh(); };
    step();
    for (const _ of [1, 2]) step();
    let y = addH(x).mul(steps);
    if (x.sum().item() > 0) {
      h = h.neg();
      y = addH(y);
    }
    for (let i = 0; i < n; i++) {
      h = h.mul(0.5);
      y = addH(y);
    }
    {
      const h = x.mul(100);
      y = addH(y).add(h.mean());
    }
    return y;
  }
}

/** `for` loops counting down and with steps other than 1, static and run-time bounds. */
export class Steps extends nn.Module {
  forward(x: Tensor, n: number, k: number): Tensor {
    let h = x;
    for (let i = 4; i >= 0; i--) h = h.mul(0.9).add(i);          // static, counting down (unrolled)
    for (let i = 0; i < 7; i += 2) h = h.sub(i * 0.1);            // static, step 2
    for (let i = n - 1; i >= 0; i--) h = h.add(i).mul(0.5);       // run-time bound, counting down
    for (let i = 1; i <= n; i += 3) h = h.add(i * 0.01);          // run-time bound, step 3
    for (let i = n; 0 < i; i -= 2) h = h.mul(1.1);                // bound on the left, step -2
    for (let i = 0; i < n; i += k) h = h.add(0.25);               // run-time step
    for (let i = n; i > 0; i -= k) h = h.sub(0.125);              // run-time step counting down
    for (let s = 1; s <= 8; s *= 2) h = h.add(s * 0.01);           // another update, static (unrolled)
    return h;
  }
}

/** Arrays built by push in loops with a static trip count, concatenated and stacked. */
export class Collect extends nn.Module {
  fc = new nn.Linear(3, 3);
  forward(x: Tensor): Tensor {
    const out: Tensor[] = [];
    let h = x;
    for (let i = 0; i < 3; i++) {
      h = this.fc.forward(h).tanh();
      out.push(h);
    }
    const rows: Tensor[] = [];
    for (let i = 2; i >= 0; i--) rows.push(out[i].mul(i));
    return cat([cat(out, 1), stack(rows, 1).flatten(1)], 1);
  }
}

/** An array pushed to in a loop whose trip count is only known at run time. */
export class CollectRuntime extends nn.Module {
  forward(x: Tensor, n: number): Tensor {
    const out: Tensor[] = [];
    for (let i = 0; i < n; i++) {
      out.push(x.mul(i));
    }
    return cat(out, 1);
  }
}

/** Branches whose tensors differ in shape under a static condition (a flag and a static size). */
export class StaticShapes extends nn.Module {
  pool = true;
  forward(x: Tensor): Tensor {
    let y = x;
    if (this.pool) {
      y = x.sum(1);
    } else {
      y = x.mul(2);
    }
    const z = x.shape[1] === 3 ? x.mean(1, { keepdim: true }) : x;
    return y.unsqueeze(1).add(z);
  }
}

/** Branches whose tensors differ in shape under a run-time condition. */
export class RuntimeShapes extends nn.Module {
  forward(x: Tensor): Tensor {
    let y = x;
    if (x.sum().item() > 0) {
      y = x.sum(1);
    }
    return y;
  }
}

/** One node of a binary tree of modules; leaves have no children. */
export class TreeNode extends nn.Module {
  fc = new nn.Linear(3, 3);
  left: TreeNode | null;
  right: TreeNode | null;
  constructor(depth: number) {
    super();
    this.left = depth > 0 ? new TreeNode(depth - 1) : null;
    this.right = depth > 1 ? new TreeNode(depth - 2) : null;
  }
}

/** A recursive helper method over a tree of modules stored on the model, and over a static count. */
export class TreeModel extends nn.Module {
  root = new TreeNode(3);
  rounds = 4;
  forward(x: Tensor): Tensor {
    return this.repeat(this.visit(this.root, x), this.rounds);
  }
  visit(node: TreeNode, x: Tensor): Tensor {
    let y = node.fc.forward(x).tanh();
    if (node.left) y = y.add(this.visit(node.left, y));
    if (node.right !== null) y = y.sub(this.visit(node.right, y).mul(0.5));
    return y;
  }
  repeat(x: Tensor, n: number): Tensor {
    return n === 0 ? x : this.repeat(x.mul(0.5).add(n), n - 1);
  }
}

/** A recursive function of the file (needs the .ts file: the runtime text of forward lacks it). */
export class FileRecursion extends nn.Module {
  forward(x: Tensor): Tensor {
    return halve(x, 5);
  }
}

function halve(x: Tensor, n: number): Tensor {
  return n <= 1 ? x.mul(0.5) : halve(x, n - 2).add(0.1);
}

/** Recursion whose depth a tensor value decides. */
export class DataRecursion extends nn.Module {
  forward(x: Tensor): Tensor {
    return this.shrink(x);
  }
  shrink(x: Tensor): Tensor {
    if (x.abs().sum().item() > 1) return this.shrink(x.mul(0.5));
    return x;
  }
}

/** Recursion driven by a static number, deeper than jit.script unrolls. */
export class DeepRecursion extends nn.Module {
  depth = 100;
  forward(x: Tensor): Tensor {
    return this.count(x, this.depth);
  }
  count(x: Tensor, n: number): Tensor {
    return n <= 0 ? x : this.count(x.add(1), n - 1);
  }
}

/** A .filter() whose predicate only run-time data decides. */
export class RuntimeFilter extends nn.Module {
  forward(x: Tensor): Tensor {
    return cat([x, x.neg()].filter((t) => t.sum().item() > 0), 1);
  }
}

/** A closure passed to another method, reading a variable reassigned where it was created. */
export class EscapingClosure extends nn.Module {
  forward(x: Tensor): Tensor {
    let scale = 2;
    if (x.sum().item() > 0) scale = 3;
    return this.apply2(x, (t: Tensor) => t.mul(scale));
  }
  apply2(x: Tensor, fn: (t: Tensor) => Tensor): Tensor {
    return fn(fn(x));
  }
}

/** A closure passed to another method that reads only values fixed when it is created. */
export class PassedClosure extends nn.Module {
  fc = new nn.Linear(3, 3);
  forward(x: Tensor): Tensor {
    const shift = x.mean();
    return this.twice(x, (t: Tensor) => this.fc.forward(t).sub(shift));
  }
  twice(x: Tensor, fn: (t: Tensor) => Tensor): Tensor {
    return fn(fn(x));
  }
}

/** A loop whose bound the body changes. */
export class MovingBound extends nn.Module {
  forward(x: Tensor, n: number): Tensor {
    let end = n;
    for (let i = 0; i < end; i += 2) {
      x = x.add(1);
      end = end - 1;
    }
    return x;
  }
}

/** A loop that steps away from its bound. */
export class WrongWay extends nn.Module {
  forward(x: Tensor, n: number): Tensor {
    for (let i = 0; i < n; i -= 2) x = x.add(1);
    return x;
  }
}

/** A library function passed directly to .map(). */
export class MapLibrary extends nn.Module {
  forward(x: Tensor): Tensor {
    return stack([x, x.neg()].map(F.relu), 0);
  }
}

/** .reduce() of an empty array with no initial value. */
export class EmptyReduce extends nn.Module {
  forward(x: Tensor): Tensor {
    const none: Tensor[] = [];
    return x.add(none.reduce((a, b) => a.add(b)));
  }
}

/** A doubling loop whose bound is only known at run time. */
export class DoublingToN extends nn.Module {
  forward(x: Tensor, n: number): Tensor {
    for (let s = 1; s < n; s *= 2) x = x.add(s);
    return x;
  }
}

/** A closure that updates a variable of forward, called from another method. */
export class EscapingUpdate extends nn.Module {
  forward(x: Tensor): Tensor {
    let total = x;
    this.each([x, x.mul(2)], (t: Tensor) => { total = total.add(t); });
    return total;
  }
  each(items: Tensor[], fn: (t: Tensor) => void): void {
    for (const t of items) fn(t);
  }
}

/** Recursion under a data-dependent condition whose depth a static count still bounds. */
export class BoundedRefine extends nn.Module {
  depth = 4;
  forward(x: Tensor): Tensor {
    return this.refine(x, this.depth);
  }
  refine(x: Tensor, depth: number): Tensor {
    if (depth > 0 && x.abs().sum().item() > 1) return this.refine(x.mul(0.5), depth - 1);
    return x;
  }
}

/** Closures created in an unrolled loop, each keeping its own loop variable, called after it. */
export class LoopClosures extends nn.Module {
  layers = new nn.ModuleList([new nn.Linear(3, 3), new nn.Linear(3, 3), new nn.Linear(3, 3)]);
  forward(x: Tensor): Tensor {
    const fns: ((t: Tensor) => Tensor)[] = [];
    for (const layer of this.layers) fns.push((t: Tensor) => layer.forward(t).relu());
    for (let i = 0; i < 2; i++) fns.push((t: Tensor) => t.add(i));
    return fns.reduce((h, fn) => fn(h), x);
  }
}

/** A loop that steps by 0. */
export class ZeroStep extends nn.Module {
  forward(x: Tensor, n: number): Tensor {
    for (let i = 0; i < n; i += 0) x = x.add(1);
    return x;
  }
}
