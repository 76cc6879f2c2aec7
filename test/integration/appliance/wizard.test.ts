// The ink wizard of `svcmail setup`, driven in a real pseudo-terminal (tmux send-keys / capture-pane).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, mode, SECRET } from './helpers.js';

const SOCKET = `svcmail-wizard-${process.pid}`;
const tmux = (...args: string[]) => spawnSync('tmux', ['-L', SOCKET, ...args], { encoding: 'utf8' });
const screen = () => tmux('capture-pane', '-p', '-t', 'wiz').stdout;

async function waitFor(re: RegExp, ms = 20_000): Promise<string> {
  const until = Date.now() + ms;
  for (;;) {
    const s = screen();
    if (re.test(s)) return s;
    if (Date.now() > until) throw new Error(`screen never matched ${re}:\n${s}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

describe('svcmail setup in a terminal (ink wizard)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-wizard-'));
  afterAll(() => {
    tmux('kill-server');
    rmSync(dir, { recursive: true, force: true });
  });

  it('asks for domain, host, sign-in service and secret, then completes the setup', async () => {
    const conf = join(dir, 'svcmail.conf');
    // CI=false: a person at a terminal; ink renders only the final frame when it thinks it runs in CI.
    const cmd = `CI=false NODE_ENV=production SVCMAIL_CONFIG= ${process.execPath} ${CLI} --config ${conf} setup; echo "EXIT=$?"; sleep 60`;
    expect(tmux('new-session', '-d', '-s', 'wiz', '-x', '160', '-y', '50', cmd).status).toBe(0);

    await waitFor(/Mail domain/);
    tmux('send-keys', '-t', 'wiz', '-l', 'not a domain');
    tmux('send-keys', '-t', 'wiz', 'Enter');
    await waitFor(/a domain such as example\.org/); // validation shown, still asking
    tmux('send-keys', '-t', 'wiz', 'BSpace');
    await waitFor(/› not a domai\s/);
    tmux('send-keys', '-t', 'wiz', 'C-u'); // clears the line
    tmux('send-keys', '-t', 'wiz', '-l', 'example.test');
    tmux('send-keys', '-t', 'wiz', 'Enter');

    await waitFor(/Host name of this server.*\n.*mail\.example\.test/); // proposed from the domain
    tmux('send-keys', '-t', 'wiz', 'Enter');
    await waitFor(/Public base URL.*\n.*https:\/\/mail\.example\.test/);
    tmux('send-keys', '-t', 'wiz', 'Enter');

    await waitFor(/Sign-in service URL.*\n.*https:\/\/auth\.example\.test/);
    tmux('send-keys', '-t', 'wiz', 'C-u');
    tmux('send-keys', '-t', 'wiz', '-l', 'http://127.0.0.1:9');
    tmux('send-keys', '-t', 'wiz', 'Enter');

    await waitFor(/Token audience.*\n.*example\.test/);
    tmux('send-keys', '-t', 'wiz', 'Enter');
    await waitFor(/Token issuer.*\n.*› 127\.0\.0\.1/); // the sign-in service's host
    tmux('send-keys', '-t', 'wiz', 'C-u');
    tmux('send-keys', '-t', 'wiz', '-l', 'auth.example.test');
    tmux('send-keys', '-t', 'wiz', 'Enter');
    await waitFor(/Secret shared with the sign-in service/);
    tmux('send-keys', '-t', 'wiz', '-l', SECRET);
    const masked = await waitFor(/›\s*\*{10,}/);
    expect(masked).not.toContain(SECRET);
    tmux('send-keys', '-t', 'wiz', 'Enter');

    await waitFor(/PostgreSQL URL/);
    tmux('send-keys', '-t', 'wiz', 'Enter');
    await waitFor(/Redis URL/);
    tmux('send-keys', '-t', 'wiz', 'Enter');

    const done = await waitFor(/EXIT=\d+/, 60_000);
    expect(done).toMatch(/EXIT=0/);
    expect(done).toMatch(/setup done: \d+ changed/);
    expect(done).toMatch(/_svc\.example\.test\. 3600 IN TXT/);

    expect(mode(conf)).toBe('640');
    const stored = JSON.parse(readFileSync(conf, 'utf8'));
    expect(stored).toMatchObject({ 'mail:host': 'mail.example.test', 'mail:base_url': 'https://mail.example.test', 'mail:auth_server_url': 'http://127.0.0.1:9', 'auth:secret': SECRET, 'auth:options:audience': 'example.test', 'auth:options:issuer': 'auth.example.test' });
    expect(stored['redis:url']).toBeUndefined();
    expect(stored['mail:transport:ingest:secret']).toMatch(/^[\w-]{16,}$/);
    expect(existsSync(join(dir, 'data/pki/ca/ca.crt'))).toBe(true);
    expect(existsSync(join(dir, 'data/dkim/example.test.mail.key'))).toBe(true);
  }, 120_000);
});
