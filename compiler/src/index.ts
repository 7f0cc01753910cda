// Placeholder entry: this package's contents arrive with later issues (see DESIGN.md).
export {};
