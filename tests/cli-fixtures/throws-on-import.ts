// CLI fixture: a model file that throws while it is imported (line 10), so `kiln compile` must
// say where, in the .ts file, and exit 1.
import { nn } from 'kiln';

class TooWide extends nn.Module {
  fc = new nn.Linear(4, 2);
}

const sizes: number[] = JSON.parse('[]') as number[];
if (sizes.length === 0) throw new Error('no layer sizes configured');

export default new TooWide();
