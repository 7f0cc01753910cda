// The real-size benchmark's models as Kiln modules, written so that their stateDict keys are
// PyTorch's: torchvision's resnet18() and torch.nn.TransformerEncoder (6 ×
// TransformerEncoderLayer(d_model 512, nhead 8, dim_feedforward 2048, batch_first=True), post-norm,
// ReLU), the transformer composed here from Kiln's nn layers (Linear, LayerNorm,
// MultiheadAttention, Dropout). Invariant: loadSafetensors of ./generate.py's state dict is strict
// (every key present, none extra), so a renamed field fails loudly instead of running on zeros.

import { nn } from 'kiln';

/** torchvision.models.resnet.BasicBlock. */
class BasicBlock extends nn.Module {
  constructor(inC, outC, stride) {
    super();
    this.conv1 = new nn.Conv2d(inC, outC, 3, { stride, padding: 1, bias: false });
    this.bn1 = new nn.BatchNorm2d(outC);
    this.relu = new nn.ReLU();
    this.conv2 = new nn.Conv2d(outC, outC, 3, { padding: 1, bias: false });
    this.bn2 = new nn.BatchNorm2d(outC);
    this.downsample = stride !== 1 || inC !== outC
      ? new nn.Sequential(new nn.Conv2d(inC, outC, 1, { stride, bias: false }), new nn.BatchNorm2d(outC))
      : null;
  }

  forward(x) {
    const out = this.bn2.forward(this.conv2.forward(this.relu.forward(this.bn1.forward(this.conv1.forward(x)))));
    const identity = this.downsample ? this.downsample.forward(x) : x;
    return this.relu.forward(out.add(identity));
  }
}

/** torchvision.models.resnet18(): 11.7M parameters, [N, 3, 224, 224] → [N, 1000]. */
export class ResNet18 extends nn.Module {
  constructor() {
    super();
    this.conv1 = new nn.Conv2d(3, 64, 7, { stride: 2, padding: 3, bias: false });
    this.bn1 = new nn.BatchNorm2d(64);
    this.relu = new nn.ReLU();
    this.maxpool = new nn.MaxPool2d(3, { stride: 2, padding: 1 });
    const stage = (inC, outC, stride) => new nn.Sequential(new BasicBlock(inC, outC, stride), new BasicBlock(outC, outC, 1));
    this.layer1 = stage(64, 64, 1);
    this.layer2 = stage(64, 128, 2);
    this.layer3 = stage(128, 256, 2);
    this.layer4 = stage(256, 512, 2);
    this.avgpool = new nn.AdaptiveAvgPool2d([1, 1]);
    this.fc = new nn.Linear(512, 1000);
  }

  forward(x) {
    let h = this.maxpool.forward(this.relu.forward(this.bn1.forward(this.conv1.forward(x))));
    h = this.layer4.forward(this.layer3.forward(this.layer2.forward(this.layer1.forward(h))));
    return this.fc.forward(this.avgpool.forward(h).flatten(1));
  }
}

/** torch.nn.TransformerEncoderLayer with batch_first=True, norm_first=False, activation relu. */
class EncoderLayer extends nn.Module {
  constructor(dModel, nhead, dimFeedforward, dropout) {
    super();
    this.self_attn = new nn.MultiheadAttention(dModel, nhead, { dropout, batchFirst: true });
    this.linear1 = new nn.Linear(dModel, dimFeedforward);
    this.dropout = new nn.Dropout(dropout);
    this.linear2 = new nn.Linear(dimFeedforward, dModel);
    this.norm1 = new nn.LayerNorm(dModel);
    this.norm2 = new nn.LayerNorm(dModel);
    this.dropout1 = new nn.Dropout(dropout);
    this.dropout2 = new nn.Dropout(dropout);
  }

  forward(x) {
    const [attn] = this.self_attn.forward(x, x, x, { needWeights: false });
    const h = this.norm1.forward(x.add(this.dropout1.forward(attn)));
    const ff = this.linear2.forward(this.dropout.forward(this.linear1.forward(h).relu()));
    return this.norm2.forward(h.add(this.dropout2.forward(ff)));
  }
}

/** torch.nn.TransformerEncoder(layer, num_layers) without a final norm: [N, S, d] → [N, S, d]. */
export class TransformerEncoder extends nn.Module {
  constructor({ layers = 6, dModel = 512, nhead = 8, dimFeedforward = 2048, dropout = 0.1 } = {}) {
    super();
    this.layers = new nn.ModuleList(Array.from({ length: layers }, () => new EncoderLayer(dModel, nhead, dimFeedforward, dropout)));
  }

  forward(x) {
    let h = x;
    for (const layer of this.layers) h = layer.forward(h);
    return h;
  }
}

/**
 * The benchmark's models: the Kiln module, its input shape per batch, the batches timed, and
 * the dims that are symbolic in the traced graph (ResNet-18's batch; the transformer is traced
 * at its one shape).
 */
export const REALSIZE_MODELS = {
  resnet18: { build: () => new ResNet18(), shape: (n) => [n, 3, 224, 224], batches: [1, 8], dynamicBatch: true },
  transformer: { build: () => new TransformerEncoder(), shape: (n) => [n, 128, 512], batches: [1], dynamicBatch: false },
};
