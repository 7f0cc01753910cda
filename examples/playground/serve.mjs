// `npm run playground`: serves dist/ on 127.0.0.1 with the cross-origin-isolation headers
// (COOP/COEP) that SharedArrayBuffer — WebAssembly threads — needs, and prints the URL.
// Invariant: only files inside dist/ are served (no path outside it, no directory listings).
//
//   node examples/playground/serve.mjs [--port 8080] [--no-build]

import { createServer } from 'node:http';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildPlayground, DIST } from './build.mjs';

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.css': 'text/css', '.tsgraph': 'application/octet-stream', '.png': 'image/png', '.json': 'application/json' };

/**
 * Serves `dir` on 127.0.0.1 (`port` 0: any free port); resolves with the server and its URL.
 * @param {{ dir?: string, port?: number }} [opts]
 * @returns {Promise<{ server: import('node:http').Server, url: string }>}
 */
export function servePlayground(opts = {}) {
  const dir = opts.dir ?? DIST;
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    const file = normalize(join(dir, path.endsWith('/') ? `${path}index.html` : path));
    res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
    res.setHeader('Cross-Origin-Embedder-Policy', 'require-corp');
    res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
    if (!(file === dir || file.startsWith(dir + sep)) || !existsSync(file) || !statSync(file).isFile()) {
      res.statusCode = 404;
      res.end('not found');
      return;
    }
    res.setHeader('content-type', TYPES[extname(file)] ?? 'application/octet-stream');
    res.end(readFileSync(file));
  });
  return new Promise((resolve, reject) => {
    server.on('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${server.address().port}/` }));
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = process.argv.slice(2);
  const at = args.indexOf('--port');
  const port = at >= 0 ? Number(args[at + 1]) : 8080;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`serve.mjs: --port needs a port number (0–65535), got '${args[at + 1] ?? ''}'\n`);
    process.exit(2);
  }
  if (!args.includes('--no-build')) {
    const sizes = await buildPlayground();
    for (const [f, n] of Object.entries(sizes)) process.stdout.write(`built dist/${f} (${(n / 1024).toFixed(0)} KiB)\n`);
  }
  const { url } = await servePlayground({ port });
  process.stdout.write(`Kiln playground: ${url}  (digits: ${url}digits.html)\n`);
}
