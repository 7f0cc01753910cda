// Models using forms of this coverage that jit.script refuses; each error points at the construct.
import { nn, type Tensor } from 'kiln';
import * as helpers from './coverage-a-helpers.js';

export class RunTimeKey extends nn.Module {
  heads = new nn.ModuleDict({ a: new nn.Linear(3, 3), b: new nn.Linear(3, 3) });
  forward(x: Tensor, n: number): Tensor {
    return this.heads.get(n as unknown as string).forward(x);
  }
}

export class MissingKey extends nn.Module {
  heads = new nn.ModuleDict({ a: new nn.Linear(3, 3), b: new nn.Linear(3, 3) });
  forward(x: Tensor): Tensor {
    return this.heads.get('c').forward(x);
  }
}

export class DictForward extends nn.Module {
  heads = new nn.ModuleDict({ a: new nn.Linear(3, 3) });
  forward(x: Tensor): Tensor {
    return x.add(this.heads.forward());
  }
}

export class AddsModule extends nn.Module {
  spare = new nn.Linear(3, 3);
  forward(x: Tensor): Tensor {
    this.addModule('late', this.spare);
    return x;
  }
}

export class NamespaceImport extends nn.Module {
  forward(x: Tensor): Tensor {
    return helpers.block(x, 2);
  }
}

export class DynamicSubmodule extends nn.Module {
  a = new nn.Linear(3, 3);
  forward(x: Tensor, n: number): Tensor {
    return this.getSubmodule(n as unknown as string).forward(x);
  }
}
