// nn — modules, layers and init (torch.nn).
export * from './loss.js';
