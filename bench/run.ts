// npm run bench -- <name> [args]: runs bench/<name>.ts and prints one JSON line of figures.
// Each benchmark module default-exports async (args) => figures.
import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const available = readdirSync(here)
  .filter((f) => f.endsWith('.ts') && !['run.ts'].includes(f) && !f.startsWith('_'))
  .map((f) => f.replace(/\.ts$/, ''));
const [name, ...args] = process.argv.slice(2);
if (!name || !available.includes(name)) {
  process.stderr.write(`usage: npm run bench -- <${available.join('|')}> [args]\n`);
  process.exit(64);
}
if (!existsSync(`${here}${name}.ts`)) process.exit(64);
const mod = (await import(`./${name}.ts`)) as { default: (args: string[]) => Promise<Record<string, unknown>> };
const started = Date.now();
const figures = await mod.default(args);
process.stdout.write(
  `${JSON.stringify({ bench: name, at: new Date().toISOString(), seconds: Math.round((Date.now() - started) / 100) / 10, ...figures })}\n`,
);
process.exit(0);
