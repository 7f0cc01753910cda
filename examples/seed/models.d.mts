// Types of models.mjs for TypeScript importers; the models themselves are plain JS.
import type { nn, Tensor } from 'kiln';

export class ResearchModel extends nn.Module {
  features: nn.Sequential;
  classifier: nn.Sequential;
  forward(x: Tensor): Tensor;
}
export class ProductionModel extends nn.Module {
  features: nn.Sequential;
  classifier: nn.Sequential;
  forward(x: Tensor): Tensor;
}
export function seedInputShape(batch: number): number[];
