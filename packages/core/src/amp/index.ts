// amp — automatic mixed precision (torch.amp / torch.cuda.amp): autocast and GradScaler.
export {
  autocast, isAutocastEnabled, getAutocastDType, LOWER_PRECISION_OPS, FLOAT32_OPS, PROMOTE_OPS,
  type AutocastDType, type AutocastOptions,
} from './autocast.js';
export { GradScaler, type GradScalerOptions, type GradScalerStateDict, type Scalable } from './grad-scaler.js';
