import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// From sources lib/ sits beside package.json; in a build it is dist/lib/.
const candidates = ['../package.json', '../../package.json'].map((p) => fileURLToPath(new URL(p, import.meta.url)));
const pkg = JSON.parse(readFileSync(candidates.find((p) => existsSync(p)) ?? candidates[0], 'utf8')) as { name: string; version: string };

export const PRODUCT = { name: pkg.name, version: pkg.version } as const;
