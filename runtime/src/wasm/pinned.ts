// Graph constants the CPU device pinned, and the forms of them kept in the WebAssembly kernel
// memory (a weight copied in once, GEMM panels packed once), so a kernel that reads a constant
// does not copy or pack it on every call. A kernel may be handed a slice of a pinned array (a
// fused conv takes a block of output channels): a view lying inside a pinned array's bytes counts
// as pinned, and its forms are keyed by the pinned array and the view's place in it.
// Invariant: a pinned array is never written again, so a form made from it stays valid until the
// array is garbage collected, when the registry frees the form's blocks.

import type { WasmHeap } from './heap.js';

interface Forms { readonly byKey: Map<string, number>; readonly blocks: number[] }

export class PinnedArrays {
  /** Pinned arrays by the buffer they view (a decoded file's constants may share one). */
  private readonly byBuffer = new WeakMap<ArrayBufferLike, Float32Array[]>();
  private readonly forms = new WeakMap<Float32Array, Forms>();
  private readonly release = new FinalizationRegistry<number[]>((blocks) => { for (const b of blocks) this.heap.free(b); });

  constructor(private readonly heap: WasmHeap) {}

  /** Marks an array as a constant: never written again. Non-float32 arrays are ignored (no kernel keeps forms of them). */
  pin(data: object): void {
    if (!(data instanceof Float32Array)) return;
    const list = this.byBuffer.get(data.buffer);
    if (!list) this.byBuffer.set(data.buffer, [data]);
    else if (!list.includes(data)) list.push(data);
  }

  /** The pinned array whose bytes contain the view's, if any. */
  owner(v: Float32Array): Float32Array | undefined {
    const list = this.byBuffer.get(v.buffer);
    if (!list) return undefined;
    const end = v.byteOffset + v.byteLength;
    return list.find((p) => v.byteOffset >= p.byteOffset && end <= p.byteOffset + p.byteLength);
  }

  /**
   * The kernel-memory block holding form `kind` of view `v` of a pinned array, made by `make` on
   * first use and kept; undefined when `v` is not pinned (the caller makes a temporary form).
   */
  form(v: Float32Array, kind: string, make: () => number): number | undefined {
    const p = this.owner(v);
    if (!p) return undefined;
    let f = this.forms.get(p);
    if (!f) {
      f = { byKey: new Map(), blocks: [] };
      this.forms.set(p, f);
      this.release.register(p, f.blocks);
    }
    const key = `${kind}@${(v.byteOffset - p.byteOffset) >> 2}+${v.length}`;
    let at = f.byKey.get(key);
    if (at === undefined) {
      at = make();
      f.byKey.set(key, at);
      f.blocks.push(at);
    }
    return at;
  }

  /**
   * Form 'copy' of a pinned view: its elements copied into the kernel memory once; a view that
   * lies in the kernel memory already (a file read there, heap.residentBlock) is used in place.
   */
  copy(v: Float32Array): number | undefined {
    if (!this.owner(v)) return undefined;
    const inPlace = this.heap.addressOf(v);
    if (inPlace !== undefined) return inPlace;
    return this.form(v, 'copy', () => {
      const at = this.heap.alloc(v.length * 4);
      this.heap.f32().set(v, at >> 2);
      return at;
    });
  }
}
