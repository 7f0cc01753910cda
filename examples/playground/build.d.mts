export declare const DIST: string;
/** Builds the playground pages into `outdir` (default dist/); resolves with each bundle's size in bytes. */
export declare function buildPlayground(opts?: { minify?: boolean; outdir?: string }): Promise<Record<string, number>>;
/** The editor's example models in menu order: [menu name, path from examples/playground]. */
export declare const EXAMPLES: readonly (readonly [string, string])[];
/** The source of the example whose file name is `file` (e.g. 'adaptive-resnet.ts'). */
export declare function exampleSource(file: string): string;
