export declare const DIST: string;
/** Builds the playground pages into `outdir` (default dist/); resolves with each bundle's size in bytes. */
export declare function buildPlayground(opts?: { minify?: boolean; outdir?: string }): Promise<Record<string, number>>;
