// @kiln/compiler: IR → IR → artifacts. The scripter (jit.script's compiler half, issue 5):
export * from './script/index.js';
// Optimization passes and their pipeline (issue 6).
export { runPipeline, runPass, PASSES, LEVELS, PassError, type Pass, type PassOptions, type PipelineOptions, type PipelineResult, type PassRecord } from './pipeline.js';
export * from './passes/index.js';
// The pattern-rewrite layer the rule-based passes share (issue 13).
export * from './patterns.js';
export { rewriteGraph, RewriteContext, type NodeVisitor } from './rewrite.js';
// WGSL codegen (issue 7).
export * from './codegen/index.js';
