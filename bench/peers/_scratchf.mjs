import { fusableOps, getOp } from '@kiln/ir-spec';
console.log(fusableOps().join(' '));
for (const o of ['relu','maximum','minimum','neg','abs','add']) { try { const s = getOp(o).scalar; console.log(o, s && ('formula' in s ? 'formula ' + s.formula.toString().slice(0,120) : 'primitive ' + s.primitive.toString().slice(0,80))); } catch (e) { console.log(o, 'none'); } }
