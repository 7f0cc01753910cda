// The `.tsgraph` container: one self-contained file holding a graph, its tensors and (later)
// its kernels. Layout and rules: ../../SPEC.md §13.
export { TsgraphError, TSGRAPH_ERROR_CODES, type TsgraphErrorCode } from './errors.js';
export {
  TSGRAPH_MAGIC, TSGRAPH_MAJOR, TSGRAPH_MINOR, MAX_HEADER_BYTES, DEFAULT_PRODUCER, CHECKSUM_ALGORITHM, CHECKSUM_MINOR,
  type TsgraphHeader, type ChecksumJson, type GraphJson, type NodeJson, type BlockJson, type ValueJson, type GraphInputJson,
  type TensorEntryJson, type SignatureJson, type ProducerJson,
} from './format.js';
export { encodeTsgraph, type EncodeOptions } from './encode.js';
export { decodeTsgraph, readTsgraphHeader, verifyChecksum, type DecodeOptions, type DecodedTsgraph, type TsgraphLayout } from './decode.js';
export { xxh32, xxh32Hex, xxh32StripesJs, XXH32_LANES0, type Xxh32Stripes } from './checksum.js';
export { MEMORY_PLAN_KEY, memoryPlanSchema, readMemoryPlan, valueIds, type MemoryPlan } from './memory-plan.js';
