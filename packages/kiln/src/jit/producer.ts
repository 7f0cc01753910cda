// Who wrote a .tsgraph file: the `producer` field of every file this package saves.
export const KILN_PRODUCER = { name: 'kiln', version: '0.1.0' };
