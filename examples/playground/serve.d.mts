import type { Server } from 'node:http';
/** Serves `dir` (default dist/) on 127.0.0.1 with COOP/COEP headers; `port` 0 picks a free one. */
export declare function servePlayground(opts?: { dir?: string; port?: number }): Promise<{ server: Server; url: string }>;
