// Op family 'linalg' (entries are added by defineOp calls in this file).
export {};
