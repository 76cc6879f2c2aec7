// A server process for the list benchmark: either the real api app on a database, or a bare
// Express route answering the same records from memory. Prints {"port": n} once listening.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { productModels, productRegistry } from '../lib/catalog.js';
import { loadConfig } from '../lib/config/index.js';
import { LocalEventBus } from '../lib/events/index.js';
import { createLogger } from '../lib/log/index.js';
import { datastoreSettings, openStore } from '../lib/storage/index.js';
import { buildApiApp } from '../daemons/api/app.js';

const [mode, arg] = process.argv.slice(2);
let app: express.Express;
if (mode === 'bare') {
  const records = JSON.parse(readFileSync(arg, 'utf8')) as unknown[];
  app = express();
  app.get('/bare', (_req, res) => void res.json(records));
} else {
  const config = loadConfig({
    env: { NODE_ENV: 'production' },
    values: {
      'auth:secret': process.env.BENCH_SECRET!,
      'auth:options:audience': 'bench',
      'auth:options:issuer': 'bench',
      ...datastoreSettings(arg),
      'log:level': 'silent',
      'mail:transport:ingest:secret': 'bench-ingest-secret-0123456789',
      'rateLimit:authenticated:max': 100_000_000,
    },
  });
  const registry = productRegistry();
  const store = await openStore(config, productModels(registry));
  app = buildApiApp({ config, store, events: new LocalEventBus(), log: createLogger({ level: 'silent' }) }, registry).app;
}
const server = createServer(app);
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`));
// Exit through process.exit so --cpu-prof and friends write their output.
for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, () => server.close(() => process.exit(0)));
