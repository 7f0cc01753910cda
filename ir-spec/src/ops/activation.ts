// Op family 'activation' (entries are added by defineOp calls in this file).
export {};
