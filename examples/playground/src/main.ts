// The playground page: the editor, the compile (in this page, compile.ts), the IR after capture
// and each pass (toggle passes, diff two stages), WGSL per kernel, the graph drawn (kiln viz's
// HTML), the run (run.ts) and the .tsgraph download. `window.playground` exposes the same
// actions and the last results to the browser tests. Invariant: every failure ends as a
// message on the page (and `#status[data-state=error]`), never only in the console.

import examples from 'playground:examples';
import { toHtml, vizModel } from '@kiln/ir-spec';
import { ALL_PASSES, compileSource, type CompileResult, type Stage } from './compile.js';
import { diffLines } from './diff.js';
import { createEditor } from './editor.js';
import { plainOutput, runBytes, type BackendWish, type RunReport } from './run.js';

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;

const status = (text: string, state: 'idle' | 'busy' | 'done' | 'error') => { const s = $('status'); s.textContent = text; s.dataset.state = state; };

const select = $<HTMLSelectElement>('example');
examples.forEach((e, i) => select.add(new Option(e.name, String(i))));
const editor = createEditor($('editor'), examples[0].source, () => void compileAndRun());
select.onchange = () => { editor.setText(examples[Number(select.value)].source); editor.showDiagnostics([]); };

const enabled = new Set(ALL_PASSES);
$('passes').innerHTML = ALL_PASSES.map((p) => `<label><input type="checkbox" data-pass="${p}" checked> ${p}</label>`).join('');
$('passes').onchange = (ev) => {
  const box = ev.target as HTMLInputElement;
  if (box.checked) enabled.add(box.dataset.pass!); else enabled.delete(box.dataset.pass!);
};

for (const b of $('tabs').querySelectorAll('button')) {
  b.onclick = () => {
    for (const o of $('tabs').querySelectorAll('button')) o.classList.toggle('on', o === b);
    for (const t of document.querySelectorAll('.tab')) t.classList.toggle('on', t.id === `tab-${b.dataset.tab}`);
  };
}

interface State { compiled?: CompileResult; run?: RunReport; runError?: string }
const state: State = {};

function showStages(stages: readonly Stage[]): void {
  const a = $<HTMLSelectElement>('stageA'), b = $<HTMLSelectElement>('stageB');
  const label = (s: Stage, i: number) => `${i}. ${s.name}${i === 0 ? '' : s.changed ? ` (${s.ms.toFixed(1)} ms)` : ' (no change)'}`;
  a.innerHTML = stages.map((s, i) => `<option value="${i}">${esc(label(s, i))}</option>`).join('');
  b.innerHTML = '<option value="">(none)</option>' + stages.map((s, i) => `<option value="${i}">${esc(label(s, i))}</option>`).join('');
  a.value = String(stages.length - 1);
  const draw = () => {
    const sa = stages[Number(a.value)];
    if (b.value === '') { $('ir').innerHTML = esc(sa.text); return; }
    const sb = stages[Number(b.value)];
    $('ir').innerHTML = diffLines(sb.text.split('\n'), sa.text.split('\n'))
      .map((l) => (l.kind === 'same' ? esc(l.text) : `<span class="${l.kind}">${l.kind === 'add' ? '+' : '-'} ${esc(l.text)}</span>`)).join('\n');
  };
  a.onchange = draw; b.onchange = draw;
  for (const box of $('passes').querySelectorAll<HTMLInputElement>('input')) {
    const st = stages.find((s) => s.name === box.dataset.pass);
    box.parentElement!.classList.toggle('idle', !st || !st.changed);
  }
  draw();
}

function showKernels(r: Extract<CompileResult, { ok: true }>): void {
  const k = $<HTMLSelectElement>('kernel');
  k.innerHTML = r.kernels.map((x, i) => `<option value="${i}">${esc(x.name)}</option>`).join('');
  const draw = () => { $('wgsl').textContent = r.kernels[Number(k.value)]?.wgsl ?? '(no kernels)'; };
  k.onchange = draw;
  draw();
  $('unsupported').textContent = r.unsupported.length ? `no WGSL for: ${r.unsupported.map((u) => `${u.op} (${u.reason})`).join(', ')}` : `${r.kernels.length} kernels`;
  const final = r.stages[r.stages.length - 1].graph;
  $<HTMLIFrameElement>('graph').srcdoc = toHtml(vizModel(final), `@${final.name} after ${r.stages[r.stages.length - 1].name}`);
}

function showRun(r: RunReport | undefined, error: string | undefined): void {
  if (!r) { $('run').innerHTML = `<p class="err">${esc(error ?? '')}</p>`; return; }
  const outs = r.outputs.map((o) => {
    const data = Array.from(o.data as ArrayLike<number>);
    const shown = data.slice(0, 64).map((v) => (Number.isInteger(v) ? String(v) : v.toFixed(5))).join(', ');
    return `<tr><td>${esc(o.name)}</td><td>${o.dtype}[${o.shape.join(',')}]</td><td style="text-align:left">${shown}${data.length > 64 ? `, … (${data.length})` : ''}</td></tr>`;
  }).join('');
  const total = r.kernels.reduce((a, k) => a + k.ms, 0);
  const kernels = r.kernels.map((k) => `<tr><td>${esc(k.op)}</td><td>${k.calls}</td><td>${k.ms.toFixed(3)}</td><td>${total ? ((100 * k.ms) / total).toFixed(1) : '0'}%</td></tr>`).join('');
  $('run').innerHTML = `
    <p>ran on <b id="ran-on">${r.backend}</b>${r.fallback ? ` — <span class="reason" id="fallback">CPU fallback: ${esc(r.fallback)}</span>` : ''}</p>
    <table><tr><th>output</th><th>type</th><th>values</th></tr>${outs}</table>
    <table><tr><th>memory</th><th></th></tr>
      <tr><td>peak intermediates</td><td>${kib(r.peakIntermediateBytes)}</td></tr><tr><td>all intermediates</td><td>${kib(r.totalIntermediateBytes)}</td></tr>
      <tr><td>weights</td><td>${kib(r.weightBytes)}</td></tr><tr><td>.tsgraph file</td><td>${kib(r.fileBytes)}</td></tr></table>
    <p>first run ${r.firstRunMs.toFixed(1)} ms (${r.backend === 'webgpu' ? 'pipelines compiled' : 'warm-up'}), profiled run ${r.runMs.toFixed(1)} ms, ${r.nodesRun} nodes</p>
    <table><tr><th>op</th><th>dispatches</th><th>ms${r.backend === 'webgpu' ? ' (host: encode + submit)' : ''}</th><th>share</th></tr>${kernels}</table>`;
}

/** Compiles the editor's text with the chosen passes, shows every view, then runs it. */
async function compileAndRun(): Promise<State> {
  status('compiling…', 'busy');
  state.compiled = undefined; state.run = undefined; state.runError = undefined;
  $<HTMLButtonElement>('download').disabled = true;
  await new Promise((r) => setTimeout(r, 0)); // let the status paint
  let r: CompileResult;
  try {
    r = compileSource(editor.text(), { mode: $<HTMLSelectElement>('mode').value as 'script' | 'trace', passes: ALL_PASSES.filter((p) => enabled.has(p)) });
  } catch (e) {
    status(`compiler failure: ${e instanceof Error ? e.message : String(e)}`, 'error');
    throw e;
  }
  state.compiled = r;
  if (!r.ok) {
    editor.showDiagnostics(r.diagnostics);
    status(`${r.stage} error at ${r.diagnostics.map((d) => `${d.line}:${d.col}: ${d.message}`).join('; ')}`, 'error');
    return state;
  }
  editor.showDiagnostics(r.warnings.map((message) => ({ line: 1, col: 1, message, severity: 'warning' })));
  showStages(r.stages);
  showKernels(r);
  $<HTMLButtonElement>('download').disabled = false;
  status(`compiled ${r.className}: ${r.stages.length - 1} passes, ${r.kernels.length} WGSL kernels; running…`, 'busy');
  try {
    state.run = await runBytes(r.bytes, r.examples, $<HTMLSelectElement>('backend').value as BackendWish);
  } catch (e) {
    state.runError = e instanceof Error ? e.message : String(e);
  }
  showRun(state.run, state.runError);
  if (state.run) status(`${r.className}: compiled and ran on ${state.run.backend} in ${state.run.runMs.toFixed(1)} ms`, 'done');
  else status(`run failed: ${state.runError}`, 'error');
  return state;
}

$('compile').onclick = () => void compileAndRun();
$('download').onclick = () => {
  const r = state.compiled;
  if (!r?.ok) return;
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([r.bytes as Uint8Array<ArrayBuffer>], { type: 'application/octet-stream' }));
  a.download = `${r.className}.tsgraph`;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
};

/** What the browser tests drive and read. */
(window as unknown as { playground: object }).playground = {
  editor, examples, compileAndRun,
  /** The last run's outputs as plain arrays, with the example inputs the run used. */
  result: () => ({
    ok: state.compiled?.ok ?? false,
    diagnostics: state.compiled && !state.compiled.ok ? state.compiled.diagnostics : [],
    stages: state.compiled?.ok ? state.compiled.stages.map((s) => ({ name: s.name, changed: s.changed })) : [],
    kernels: state.compiled?.ok ? state.compiled.kernels.length : 0,
    backend: state.run?.backend, fallback: state.run?.fallback, runError: state.runError,
    outputs: state.run?.outputs.map(plainOutput) ?? [],
  }),
};
status('ready', 'idle');
