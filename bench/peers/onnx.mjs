// A minimal ONNX writer for the seed model: protobuf wire encoding of ModelProto / GraphProto /
// NodeProto / AttributeProto / TensorProto / ValueInfoProto (field numbers from onnx.proto), and
// the seed ResearchModel (eval) as Conv, BatchNormalization, Relu, MaxPool, Flatten, Gemm nodes;
// `onnxModel` builds the other benchmark models (bench/peers/cpu-models.mjs) the same way.
// Invariant: the exported graph computes exactly Kiln's eval forward pass with Kiln's weights
// (dropout is an identity in eval and is left out); the batch dimension is the symbol "N".

const FLOAT = 1; // TensorProto.DataType.FLOAT
const ATTR = { FLOAT: 1, INT: 2, INTS: 7 }; // AttributeProto.AttributeType
const FLOAT_ATTRS = new Set(['epsilon', 'alpha', 'beta']); // attributes ONNX types as float

/** Protobuf bytes built field by field (wire types 0 varint, 2 length-delimited, 5 fixed32). */
class Proto {
  parts = [];

  varint(field, v) {
    this.#key(field, 0);
    this.#raw(BigInt.asUintN(64, BigInt(v)));
    return this;
  }

  float(field, v) {
    this.#key(field, 5);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, v, true);
    this.parts.push(b);
    return this;
  }

  bytes(field, b) {
    this.#key(field, 2);
    this.#raw(BigInt(b.length));
    this.parts.push(b);
    return this;
  }

  string(field, s) {
    return this.bytes(field, new TextEncoder().encode(s));
  }

  message(field, m) {
    return this.bytes(field, m.finish());
  }

  finish() {
    const out = new Uint8Array(this.parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of this.parts) { out.set(p, at); at += p.length; }
    return out;
  }

  #key(field, wire) {
    this.#raw(BigInt((field << 3) | wire));
  }

  #raw(v) {
    const b = [];
    do {
      let byte = Number(v & 0x7fn);
      v >>= 7n;
      if (v) byte |= 0x80;
      b.push(byte);
    } while (v);
    this.parts.push(Uint8Array.from(b));
  }
}

/** AttributeProto: name 1, f 2, i 3, ints 8, type 20. */
function attribute(name, value) {
  const a = new Proto().string(1, name);
  if (Array.isArray(value)) {
    for (const v of value) a.varint(8, v);
    return a.varint(20, ATTR.INTS);
  }
  return FLOAT_ATTRS.has(name) ? a.float(2, value).varint(20, ATTR.FLOAT) : a.varint(3, value).varint(20, ATTR.INT);
}

/** NodeProto: input 1, output 2, name 3, op_type 4, attribute 5. */
function node(opType, inputs, output, attrs = {}) {
  const n = new Proto();
  for (const i of inputs) n.string(1, i);
  n.string(2, output).string(3, output).string(4, opType);
  for (const [k, v] of Object.entries(attrs)) n.message(5, attribute(k, v));
  return n;
}

/** TensorProto (float32, raw little-endian data): dims 1, data_type 2, name 8, raw_data 9. */
function initializer(name, { data, shape }) {
  const t = new Proto();
  for (const d of shape) t.varint(1, d);
  const f32 = Float32Array.from(data);
  return t.varint(2, FLOAT).string(8, name).bytes(9, new Uint8Array(f32.buffer));
}

/** ValueInfoProto of a float32 tensor; a string dim is symbolic (dim_param), a number fixed. */
function valueInfo(name, dims) {
  const shape = new Proto();
  for (const d of dims) shape.message(1, typeof d === 'string' ? new Proto().string(2, d) : new Proto().varint(1, d));
  const tensorType = new Proto().varint(1, FLOAT).message(2, shape);
  return new Proto().string(1, name).message(2, new Proto().message(1, tensorType));
}

/**
 * An ONNX model (opset 17) with one float32 input "x" and one output "logits": `build(op, param)`
 * adds nodes (`op(type, inputs, output, attrs)` returns the output name) and initializers
 * (`param(name, {data, shape})` returns the name) and returns nothing.
 * @returns {Uint8Array} the .onnx file's bytes
 */
export function onnxModel(name, inputDims, outputDims, build) {
  const inits = [];
  const nodes = [];
  build(
    (type, inputs, out, attrs) => { nodes.push(node(type, inputs, out, attrs)); return out; },
    (pname, t) => { inits.push(initializer(pname, t)); return pname; },
  );
  // GraphProto: node 1, name 2, initializer 5, input 11, output 12.
  const graph = new Proto();
  for (const n of nodes) graph.message(1, n);
  graph.string(2, name);
  for (const t of inits) graph.message(5, t);
  graph.message(11, valueInfo('x', inputDims));
  graph.message(12, valueInfo('logits', outputDims));
  // ModelProto: ir_version 1, producer_name 2, graph 7, opset_import 8 (domain 1, version 2).
  return new Proto().varint(1, 8).string(2, 'kiln-bench').message(7, graph).message(8, new Proto().string(1, '').varint(2, 17)).finish();
}

/**
 * The seed ResearchModel (eval) as an ONNX model (opset 17): input "x" [N, 3, 32, 32] NCHW,
 * output "logits" [N, 10].
 * @param {ReturnType<import('./model.mjs').seedModel>['weights']} w
 * @returns {Uint8Array} the .onnx file's bytes
 */
export function seedModelOnnx(w) {
  return onnxModel('seed_research_model', ['N', 3, 32, 32], ['N', 10], (op, param) => {
    const block = (x, i, conv, bn) => {
      const c = op('Conv', [x, param(`conv${i}.weight`, conv.weight), param(`conv${i}.bias`, conv.bias)], `conv${i}`, { kernel_shape: [3, 3], pads: [1, 1, 1, 1], strides: [1, 1] });
      const b = op('BatchNormalization', [c, param(`bn${i}.gamma`, bn.gamma), param(`bn${i}.beta`, bn.beta), param(`bn${i}.mean`, bn.mean), param(`bn${i}.var`, bn.variance)], `bn${i}`, { epsilon: bn.eps });
      const r = op('Relu', [b], `relu${i}`);
      return op('MaxPool', [r], `pool${i}`, { kernel_shape: [2, 2], strides: [2, 2] });
    };
    const f = op('Flatten', [block(block('x', 1, w.conv1, w.bn1), 2, w.conv2, w.bn2)], 'flat', { axis: 1 });
    const h = op('Relu', [op('Gemm', [f, param('fc1.weight', w.fc1.weight), param('fc1.bias', w.fc1.bias)], 'fc1', { transB: 1 })], 'relu3');
    op('Gemm', [h, param('fc2.weight', w.fc2.weight), param('fc2.bias', w.fc2.bias)], 'logits', { transB: 1 });
  });
}
