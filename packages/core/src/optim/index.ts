// optim — optimizers (torch.optim).
export {};
