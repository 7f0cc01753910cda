// A model file whose top-level script code ends the process: `kiln compile` must fail (exit 1)
// and say that the file exited during import, not exit 0 with no output.
import { nn } from 'kiln';

export default new nn.Linear(4, 2);
export const inputs = ['x:f32[N,4]'];

process.exit(0);
