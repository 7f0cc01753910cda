// kiln's `profiler` namespace (torch.profiler): profile(), start()/step()/stop() with schedule(),
// keyAverages().table(), exportChromeTrace(), and makeDot for autograd graphs.
export { profile, start, Profiler, type ProfileOptions, type Activity } from './profile.js';
export { schedule, type Schedule, type ScheduleOptions, type ProfilerAction } from './schedule.js';
export { KeyAverages, type KeyAverage, type GroupBy, type SortBy } from './key-averages.js';
export type { ProfilerEvent, EventKind } from './events.js';
export type { ChromeTraceEvent } from './chrome-trace.js';
