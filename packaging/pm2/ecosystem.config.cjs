// pm2 ecosystem for hosts without systemd: `svcmail start` runs `pm2 start <this file>`.
// pm2 is a separate program (AGPL) that svcmail only invokes; it is never bundled or imported.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS file pm2 loads
const fs = require('node:fs');
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS file pm2 loads
const path = require('node:path');

const root = path.resolve(__dirname, '..', '..');
const daemons = ['api', 'worker', 'push', 'protocols'];

/** The fields of a name's line in a passwd or group file (where pm2 itself looks them up), or null. */
function entry(file, name) {
  try {
    const line = fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .find((l) => l.split(':')[0] === name);
    return line ? line.split(':') : null;
  } catch {
    return null;
  }
}

/**
 * The account the daemons run as, like User= and Group= of the systemd units: the `svcmail` user
 * the package creates (SVCMAIL_USER names another) when pm2 runs as root and that user exists, in
 * its home directory, else / as systemd does (pm2 would leave them in the cwd of `pm2 start`,
 * which that user may not be allowed to read); otherwise pm2's own user, e.g. a developer's pm2.
 */
function account(env, uid, passwd, group) {
  const user = env.SVCMAIL_USER || 'svcmail';
  const pw = uid === 0 ? entry(passwd, user) : null;
  if (!pw) return {};
  return { uid: user, ...(entry(group, user) ? { gid: user } : {}), cwd: pw[5] && fs.existsSync(pw[5]) ? pw[5] : '/' };
}

function apps(env = process.env, uid = process.getuid(), passwd = '/etc/passwd', group = '/etc/group') {
  return daemons.map((name) => ({
    name: `svcmail-${name}`,
    script: path.join(root, 'bin', `svcmail-${name}.js`),
    args: ['--config', env.SVCMAIL_CONFIG || '/etc/svcmail/svcmail.conf'],
    interpreter: 'node',
    // The node arguments of the systemd units (cli/daemons.ts DAEMON_NODE_ARGS): a capped young generation.
    node_args: ['--max-semi-space-size=4'],
    exec_mode: 'fork',
    instances: 1,
    ...account(env, uid, passwd, group),
    autorestart: true,
    // 78 (EX_CONFIG): a broken configuration is not restarted in a loop.
    stop_exit_codes: [78],
    max_restarts: 20,
    min_uptime: '5s',
    kill_timeout: 20000,
    time: true,
    env: { NODE_ENV: 'production' },
  }));
}

// appsFor: the same list for another environment, user id or passwd/group files.
module.exports = { apps: apps(), appsFor: apps };
