// The `jit` namespace: compile eager models into graphs and run or save them.
export { trace, TracedModule, TraceCheckError, TraceArgumentError, GuardError, type TraceOptions } from './traced-module.js';
export { GuardSet, GuardedCache, guardsForReads, valueGuard, type Guard, type GuardFailure } from './guards.js';
export type { Specialization } from './specialization.js';
export { load, LoadedModule, type GraphInput } from './load.js';
export { ScriptModule, ScriptError, type ScriptOptions } from './script.js';
export { script, ignore, unused, exportMethod as export, exportMethod } from './script-decorators.js';
import { trace as tracer } from '@kiln/core';
export const TraceError = tracer.TraceError;
export type TraceWarning = tracer.TraceWarning;
export { freeze, optimizeForInference, OptimizedModule, type OptimizeOptions, type CompiledModule } from './optimize.js';
export { generateWgsl, type CodegenResult, type Unsupported } from '@kiln/compiler';
export type { SaveOptions } from './producer.js';
export { compile, CompiledModel, type CompileOptions, type CompileExplanation, type CompiledFunction } from './compile.js';
export { exportOnnx, type ExportOnnxOptions, type OnnxExportable } from '../onnx/export.js';
export { OnnxExportError } from '../onnx/export-writer.js';
export { loadOnnx, OnnxModule } from '../onnx/onnx-module.js';
export { supportedOnnxOps } from '../onnx/import.js';
export { OnnxImportError } from '../onnx/import-values.js';
