// The digits page: a drawing pad, reduced to the 8×8 image of scikit-learn's digits (pixel
// values 0–16, the model takes them /16), run by @kiln/runtime on `digits.tsgraph` (the model
// `npm run demo` trains and saves) after every stroke, the class probabilities drawn as bars.
// Invariant: the image the model sees is the one `window.digits.image()` returns and the small
// canvas shows, so a test can run the same 8×8 image through Node's runtime.

import { load, type Model } from '@kiln/runtime';

const pad = document.getElementById('pad') as HTMLCanvasElement;
const small = document.getElementById('small') as HTMLCanvasElement;
const ctx = pad.getContext('2d', { willReadFrequently: true })!;
const status = (text: string, state: 'idle' | 'busy' | 'done' | 'error') => { const s = document.getElementById('status')!; s.textContent = text; s.dataset.state = state; };

let model: Model | undefined;
let last: { image: number[]; probs: number[]; prediction: number } | undefined;
let pending = false, again = false;

function clear(): void {
  ctx.fillStyle = '#000';
  ctx.fillRect(0, 0, pad.width, pad.height);
  last = undefined;
  small.getContext('2d')!.clearRect(0, 0, 8, 8);
  document.getElementById('prediction')!.textContent = '–';
  drawBars(new Array(10).fill(0), -1);
}

/** The pad as 8×8 values in [0, 1]: the mean brightness of each 32×32 block, rounded to sixteenths as in the data set. */
function image(): number[] {
  const { data } = ctx.getImageData(0, 0, pad.width, pad.height);
  const cell = pad.width / 8;
  const out: number[] = [];
  for (let r = 0; r < 8; r++) {
    for (let c = 0; c < 8; c++) {
      let sum = 0;
      for (let y = r * cell; y < (r + 1) * cell; y++) for (let x = c * cell; x < (c + 1) * cell; x++) sum += data[(y * pad.width + x) * 4];
      out.push(Math.round((16 * sum) / (255 * cell * cell)) / 16);
    }
  }
  return out;
}

function drawBars(probs: readonly number[], best: number): void {
  document.getElementById('bars')!.innerHTML = probs.map((p, i) =>
    `<div class="bar${i === best ? ' best' : ''}" data-digit="${i}"><span>${i}</span><div style="width:${Math.round(p * 240)}px"></div><span>${(100 * p).toFixed(1)}%</span></div>`).join('');
}

async function predict(): Promise<void> {
  if (!model) return;
  if (pending) { again = true; return; }
  pending = true;
  try {
    const img = image();
    const sctx = small.getContext('2d')!;
    const pix = sctx.createImageData(8, 8);
    img.forEach((v, i) => { pix.data.set([v * 255, v * 255, v * 255, 255], i * 4); });
    sctx.putImageData(pix, 0, 0);
    const [out] = await model.run([{ data: Float32Array.from(img), shape: [1, 1, 8, 8], dtype: 'float32' }]);
    const logits = Array.from(out.data as Float32Array);
    const max = Math.max(...logits);
    const exps = logits.map((l) => Math.exp(l - max));
    const sum = exps.reduce((a, b) => a + b, 0);
    const probs = exps.map((e) => e / sum);
    const prediction = logits.indexOf(max);
    last = { image: img, probs, prediction };
    document.getElementById('prediction')!.textContent = String(prediction);
    drawBars(probs, prediction);
    status(`predicted ${prediction} on ${model.backend}`, 'done');
  } catch (e) {
    status(`prediction failed: ${e instanceof Error ? e.message : String(e)}`, 'error');
  } finally {
    pending = false;
    if (again) { again = false; void predict(); }
  }
}

let drawing = false;
let prev: [number, number] | undefined;
const at = (e: PointerEvent): [number, number] => { const b = pad.getBoundingClientRect(); return [(e.clientX - b.left) * (pad.width / b.width), (e.clientY - b.top) * (pad.height / b.height)]; };
pad.addEventListener('pointerdown', (e) => { drawing = true; prev = at(e); pad.setPointerCapture?.(e.pointerId); stroke(prev); });
pad.addEventListener('pointermove', (e) => { if (drawing) stroke(at(e)); });
const end = () => { if (drawing) { drawing = false; prev = undefined; void predict(); } };
pad.addEventListener('pointerup', end);
pad.addEventListener('pointerleave', end);

function stroke(p: [number, number]): void {
  ctx.strokeStyle = '#fff'; ctx.lineWidth = 22; ctx.lineCap = 'round'; ctx.lineJoin = 'round';
  ctx.beginPath(); ctx.moveTo(...(prev ?? p)); ctx.lineTo(...p); ctx.stroke();
  prev = p;
  void predict();
}

async function start(backend: 'cpu' | 'webgpu'): Promise<void> {
  status(`loading digits.tsgraph on ${backend}…`, 'busy');
  try {
    model = await load('digits.tsgraph', { backend });
    status(`ready (${model.backend}): draw a digit`, 'idle');
  } catch (e) {
    if (backend === 'webgpu') {
      model = await load('digits.tsgraph', { backend: 'cpu' });
      status(`CPU fallback: ${e instanceof Error ? e.message : String(e)}`, 'idle');
    } else {
      status(`could not load digits.tsgraph: ${e instanceof Error ? e.message : String(e)}`, 'error');
    }
  }
  if (last) void predict();
}

(document.getElementById('clear') as HTMLButtonElement).onclick = clear;
const backendSelect = document.getElementById('backend') as HTMLSelectElement;
backendSelect.onchange = () => void start(backendSelect.value as 'cpu' | 'webgpu');
clear();
void start('cpu');

/** What the browser tests read. */
(window as unknown as { digits: object }).digits = { image, last: () => last, ready: () => model !== undefined && !pending };
