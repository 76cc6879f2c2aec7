/* global module, require, __dirname -- CommonJS, the form dependency-cruiser loads */
// The structure docs/DEVELOPING.md draws, checked in `npm test` (npm run lint:deps). Known
// violations of the layer and index rules are listed in .dependency-cruiser-known-violations.json
// while the code moves; that list only shrinks (regenerate it with npm run lint:deps:baseline
// only after removing violations, never to admit new ones).

// lib/ from the bottom up: a folder may import its own layer and the ones below, never above.
const LAYERS = [
  ['config', 'errors', 'log', 'crash-points', 'mta-client', 'version.ts'],
  ['storage', 'events'],
  ['context'],
  ['auth', 'acl', 'audit'],
  ['http', 'resources'],
  ['settings'],
  ['pki', 'scan', 'mail'],
  ['admin', 'ingest', 'send', 'keys', 'escrow', 'pim', 'lifecycle', 'jobs', 'dns', 'basic-auth', 'plugins', 'web', 'setup', 'catalog.ts'],
];
// Every folder and top-level file of lib/ is on a layer: a new one is placed on purpose.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS file
const unplaced = require('node:fs')
  .readdirSync(`${__dirname}/lib`)
  .filter((n) => !LAYERS.flat().includes(n));
if (unplaced.length) throw new Error(`.dependency-cruiser.cjs: put lib/${unplaced.join(', lib/')} on a layer of LAYERS`);

const group = (names) => `^lib/(${names.map((n) => n.replace('.', '[.]')).join('|')})(/|$)`;

const layerRules = LAYERS.slice(0, -1).map((names, i) => ({
  name: `layer-${i}-imports-above`,
  comment: `lib/{${names.join(',')}} is layer ${i}: it may not import a higher layer (docs/DEVELOPING.md, "Layers")`,
  severity: 'error',
  from: { path: group(names) },
  to: { path: group(LAYERS.slice(i + 1).flat()) },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment:
        'A cycle makes load order matter and every file in it changes with the others: break it by moving the shared part down a layer.',
      severity: 'error',
      from: { path: '^(lib|daemons|cli)/' },
      to: { circular: true },
    },
    ...layerRules,
    {
      name: 'lib-imports-no-process',
      comment: 'lib/ is the library the daemons and the CLI are built from; it never imports them.',
      severity: 'error',
      from: { path: '^lib/' },
      to: { path: '^(daemons|cli|bin|test|bench)/' },
    },
    {
      name: 'daemons-import-no-cli',
      comment: 'A daemon runs without the CLI; the CLI may start daemons (their shared start-up code is daemons/shared).',
      severity: 'error',
      from: { path: '^daemons/' },
      to: { path: '^cli/' },
    },
    {
      name: 'through-index',
      comment: 'Another folder of lib/ is used through its index.ts, which says what it offers; its other files are its own business.',
      severity: 'error',
      from: { path: '^(lib|daemons|cli)/([^/]+)/' },
      to: { path: '^lib/([^/]+)/.+', pathNot: ['^lib/$2/', '^lib/[^/]+/index[.]ts$', '^lib/[^/]+/[^/]+/index[.]ts$'] },
    },
    {
      name: 'plugins-use-the-plugin-api',
      comment:
        'A protocol plugin (lib/plugins/<name>/) sees the product only through lib/plugins/api.ts, so the host can change behind it.',
      severity: 'error',
      from: { path: '^lib/plugins/([^/]+)/' },
      to: { path: '^lib/', pathNot: ['^lib/plugins/$1/', '^lib/plugins/api[.]ts$'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.js'] },
  },
};
