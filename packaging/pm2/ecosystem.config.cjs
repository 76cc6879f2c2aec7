// pm2 ecosystem for hosts without systemd: `svcmail start` runs `pm2 start <this file>`.
// pm2 is a separate program (AGPL) that svcmail only invokes; it is never bundled or imported.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS file pm2 loads
const path = require('node:path');

const root = path.resolve(__dirname, '..', '..');
const config = process.env.SVCMAIL_CONFIG || '/etc/svcmail/svcmail.conf';
const daemons = ['api', 'worker', 'push', 'protocols'];

module.exports = {
  apps: daemons.map((name) => ({
    name: `svcmail-${name}`,
    script: path.join(root, 'bin', `svcmail-${name}.js`),
    args: ['--config', config],
    interpreter: 'node',
    exec_mode: 'fork',
    instances: 1,
    autorestart: true,
    // 78 (EX_CONFIG): a broken configuration is not restarted in a loop.
    stop_exit_codes: [78],
    max_restarts: 20,
    min_uptime: '5s',
    kill_timeout: 20000,
    time: true,
    env: { NODE_ENV: 'production' },
  })),
};
