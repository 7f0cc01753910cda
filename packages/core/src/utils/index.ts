// utils — checkpointing and helpers (torch.utils).
export {};
