// Op family 'indexing' (entries are added by defineOp calls in this file).
export {};
