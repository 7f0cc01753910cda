// The executable: runs the CLI on process.argv and exits with its code.
import { main } from './main.js';

process.exitCode = await main(process.argv.slice(2));
