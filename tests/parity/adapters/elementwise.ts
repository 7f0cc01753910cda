// Golden 'elementwise' cases → Kiln calls. See ../adapter.ts for the contract.
import type { AdapterTable } from '../adapter.js';

export const adapters: AdapterTable = {};
