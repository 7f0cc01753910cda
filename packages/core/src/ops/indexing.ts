// Function forms of index-based ops: index_select, gather, scatter_add, masked_select, tril/triu.

import type { Tensor } from '../tensor.js';

export function indexSelect(x: Tensor, dim: number, index: Tensor): Tensor { throw notYet('indexSelect'); }
export function gather(x: Tensor, dim: number, index: Tensor): Tensor { throw notYet('gather'); }
export function scatterAdd(x: Tensor, dim: number, index: Tensor, src: Tensor): Tensor { throw notYet('scatterAdd'); }
export function maskedSelect(x: Tensor, mask: Tensor): Tensor { throw notYet('maskedSelect'); }
export function tril(x: Tensor, diagonal = 0): Tensor { throw notYet('tril'); }
export function triu(x: Tensor, diagonal = 0): Tensor { throw notYet('triu'); }

function notYet(name: string): Error { return new Error(`${name} is not implemented yet`); }
