// Headless Chromium driven through the DevTools protocol over a pipe (--remote-debugging-pipe:
// JSON messages ending in NUL on file descriptors 3 and 4, so no WebSocket and no extra
// package): open a page, evaluate in it, send input events, take screenshots. Started with the
// flags of harness.ts (WebGPU on SwiftShader) and a fresh profile, killed by its own process
// group. Invariant: every command resolves or rejects (a protocol error, or Chromium exiting).

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { CHROMIUM_FLAGS } from './harness.js';

type Params = Record<string, unknown>;

export class Browser {
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void; method: string }>();
  private log = '';
  private exited: Error | undefined;

  private constructor(private readonly chrome: ChildProcess, private readonly profile: string) {
    const input = chrome.stdio[4] as Readable;
    let buffered = '';
    input.on('data', (c: Buffer) => {
      buffered += c.toString('utf8');
      let end: number;
      while ((end = buffered.indexOf('\0')) >= 0) {
        const msg = JSON.parse(buffered.slice(0, end)) as { id?: number; result?: unknown; error?: { message: string } };
        buffered = buffered.slice(end + 1);
        const w = msg.id === undefined ? undefined : this.waiting.get(msg.id);
        if (!w) continue;
        this.waiting.delete(msg.id!);
        if (msg.error) w.reject(new Error(`${w.method}: ${msg.error.message}`));
        else w.resolve(msg.result);
      }
    });
    chrome.stderr!.on('data', (c: Buffer) => { this.log = (this.log + c.toString('utf8')).slice(-4000); });
    chrome.on('exit', (code) => {
      this.exited = new Error(`chromium exited (code ${code}); its log ends:\n${this.log}`);
      for (const w of this.waiting.values()) w.reject(this.exited);
      this.waiting.clear();
    });
  }

  /** Starts Chromium (KILN_CHROMIUM, else /usr/bin/chromium) with the WebGPU flags and a viewport of `width`×`height`. */
  static async launch(width = 1200, height = 760): Promise<Browser> {
    const exe = process.env.KILN_CHROMIUM ?? '/usr/bin/chromium';
    const profile = mkdtempSync(join(tmpdir(), 'kiln-cdp-'));
    const chrome = spawn(exe, [...CHROMIUM_FLAGS, '--remote-debugging-pipe', `--user-data-dir=${profile}`, `--window-size=${width},${height}`, '--hide-scrollbars', 'about:blank'],
      { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'], detached: true });
    await new Promise<void>((resolve, reject) => {
      chrome.once('spawn', resolve);
      chrome.once('error', (e) => reject(new Error(`could not start ${exe} (install Debian's chromium; .ci/run does): ${e.message}`)));
    });
    return new Browser(chrome, profile);
  }

  /** Sends one protocol command (to a page when `sessionId` is given). */
  send<T = any>(method: string, params: Params = {}, sessionId?: string): Promise<T> {
    if (this.exited) return Promise.reject(this.exited);
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject, method });
      (this.chrome.stdio[3] as Writable).write(`${JSON.stringify({ id, method, params, sessionId })}\0`);
    });
  }

  /** A new page (tab) at `url`, attached for commands. */
  async open(url: string): Promise<Page> {
    const { targetId } = await this.send<{ targetId: string }>('Target.createTarget', { url: 'about:blank' });
    const { sessionId } = await this.send<{ sessionId: string }>('Target.attachToTarget', { targetId, flatten: true });
    const page = new Page(this, sessionId);
    await page.send('Runtime.enable');
    await page.send('Page.enable');
    await page.send('Page.navigate', { url });
    return page;
  }

  /** Kills the browser's whole process group and removes its profile. */
  async close(): Promise<void> {
    const c = this.chrome;
    if (c.exitCode === null && c.signalCode === null && c.pid !== undefined) {
      const gone = new Promise((r) => c.once('exit', r));
      try { process.kill(-c.pid, 'SIGKILL'); } catch { c.kill('SIGKILL'); }
      await gone;
    }
    try { rmSync(this.profile, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 }); } catch { /* left in the OS temp folder */ }
  }
}

export class Page {
  constructor(private readonly browser: Browser, readonly sessionId: string) {}

  send<T = any>(method: string, params: Params = {}): Promise<T> { return this.browser.send<T>(method, params, this.sessionId); }

  /** The value of `expression` in the page (promises awaited); a page exception rejects with its text. */
  async evaluate<T = unknown>(expression: string): Promise<T> {
    const r = await this.send<{ result: { value?: T }; exceptionDetails?: { text: string; exception?: { description?: string } } }>('Runtime.evaluate',
      { expression, awaitPromise: true, returnByValue: true });
    if (r.exceptionDetails) throw new Error(`in the page: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
    return r.result.value as T;
  }

  /** Polls `expression` until it is truthy; rejects after `timeoutMs` with `what`. */
  async waitFor(expression: string, what: string, timeoutMs = 60_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      try { if (await this.evaluate<boolean>(`Boolean(${expression})`)) return; } catch { /* the page may be navigating */ }
      if (Date.now() > end) throw new Error(`waited ${timeoutMs} ms for ${what} (${expression})`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** A mouse event at page coordinates (left button for pressed/released and moves while pressed). */
  mouse(type: 'mousePressed' | 'mouseMoved' | 'mouseReleased', x: number, y: number, pressed = false): Promise<unknown> {
    return this.send('Input.dispatchMouseEvent', { type, x, y, button: type === 'mouseMoved' && !pressed ? 'none' : 'left', buttons: pressed || type === 'mousePressed' ? 1 : 0, clickCount: type === 'mouseMoved' ? 0 : 1 });
  }

  /** A PNG of the viewport. */
  async screenshot(): Promise<Buffer> {
    const { data } = await this.send<{ data: string }>('Page.captureScreenshot', { format: 'png' });
    return Buffer.from(data, 'base64');
  }
}
