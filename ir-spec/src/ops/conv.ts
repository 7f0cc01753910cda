// Op family 'conv' (entries are added by defineOp calls in this file).
export {};
