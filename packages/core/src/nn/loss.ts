// nn loss modules (CrossEntropyLoss, MSELoss, ...): to be written.
export {};
