// The ONNX protobuf messages, from ONNX's own schema (onnx.proto → schema.generated.ts) through
// protobufjs: encodeModel/decodeModel are the only places bytes are written or read. Message
// objects use the schema's field names (snake_case: `raw_data`, `elem_type`); 64-bit integers
// decode as JavaScript numbers.

import protobuf from 'protobufjs';
import { ONNX_SCHEMA } from './schema.generated.js';

const root = protobuf.Root.fromJSON(ONNX_SCHEMA as protobuf.INamespace);
const ModelProto = root.lookupType('onnx.ModelProto');

/** TensorProto.DataType values Kiln reads or writes. */
export const ONNX_DTYPE = { FLOAT: 1, UINT8: 2, INT8: 3, INT32: 6, INT64: 7, BOOL: 9, FLOAT16: 10, DOUBLE: 11, BFLOAT16: 16 } as const;
/** AttributeProto.AttributeType values. */
export const ATTR_TYPE = { FLOAT: 1, INT: 2, STRING: 3, TENSOR: 4, GRAPH: 5, FLOATS: 6, INTS: 7, STRINGS: 8 } as const;

export interface TensorProto {
  name?: string;
  dims?: number[];
  data_type: number;
  float_data?: number[];
  int32_data?: number[];
  int64_data?: number[];
  double_data?: number[];
  raw_data?: Uint8Array;
}
export interface AttributeProto {
  name: string;
  type: number;
  i?: number; f?: number; s?: Uint8Array; t?: TensorProto; g?: GraphProto;
  ints?: number[]; floats?: number[]; strings?: Uint8Array[];
}
export interface NodeProto { name?: string; op_type: string; domain?: string; input: string[]; output: string[]; attribute?: AttributeProto[] }
export interface DimProto { dim_value?: number; dim_param?: string }
export interface TypeProto { tensor_type?: { elem_type: number; shape?: { dim: DimProto[] } } }
export interface ValueInfoProto { name: string; type?: TypeProto }
export interface GraphProto {
  name?: string;
  node: NodeProto[];
  initializer?: TensorProto[];
  input: ValueInfoProto[];
  output: ValueInfoProto[];
  value_info?: ValueInfoProto[];
}
export interface ModelProtoObject {
  ir_version: number;
  opset_import: { domain?: string; version: number }[];
  producer_name?: string;
  producer_version?: string;
  graph: GraphProto;
  metadata_props?: { key: string; value: string }[];
}

/** The model's protobuf bytes. */
export function encodeModel(model: ModelProtoObject): Uint8Array {
  const err = ModelProto.verify(model);
  if (err) throw new Error(`exportOnnx: internal error, the model does not match onnx.proto: ${err}`);
  return ModelProto.encode(ModelProto.fromObject(model)).finish();
}

/** Decodes ModelProto bytes; throws naming what is wrong when they are not an ONNX model. */
export function decodeModel(bytes: Uint8Array): ModelProtoObject {
  let msg: protobuf.Message;
  try {
    msg = ModelProto.decode(bytes);
  } catch (e) {
    throw new Error(`loadOnnx: the bytes are not an ONNX ModelProto (${(e as Error).message})`);
  }
  const obj = ModelProto.toObject(msg, { longs: Number, arrays: true }) as ModelProtoObject;
  if (!obj.graph) throw new Error('loadOnnx: the ModelProto has no graph');
  return obj;
}
