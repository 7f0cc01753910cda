// Op family 'pool' (entries are added by defineOp calls in this file).
export {};
