// kiln — what users import: the eager library (and, as later issues land, the jit API).
export * from '@kiln/core';
