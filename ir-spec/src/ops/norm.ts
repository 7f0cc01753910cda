// Op family 'norm' (entries are added by defineOp calls in this file).
export {};
