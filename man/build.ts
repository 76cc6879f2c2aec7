// npm run man: writes the roff pages to man/build (or the directory given) from the command
// declarations and the configuration schema. The sources are cli/man/*.ts.
import { writeManPages } from '../cli/man/index.js';

const dir = process.argv[2] ?? new URL('./build', import.meta.url).pathname;
const files = writeManPages(dir);
process.stdout.write(`man: ${files.length} pages written to ${dir}\n`);
