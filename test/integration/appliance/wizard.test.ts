// The ink wizard of `svcmail setup`, driven in a real pseudo-terminal (tmux send-keys / capture-pane).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { requirePrograms } from '../../helpers/peers.js';
import { CLI, mode, SECRET } from './helpers.js';

const SOCKET = `svcmail-wizard-${process.pid}`;
const tmux = (...args: string[]) => spawnSync('tmux', ['-L', SOCKET, ...args], { encoding: 'utf8' });
const screen = (session = 'wiz') => tmux('capture-pane', '-p', '-t', session).stdout;

async function waitFor(re: RegExp, ms = 20_000, session = 'wiz'): Promise<string> {
  const until = Date.now() + ms;
  for (;;) {
    const s = screen(session);
    if (re.test(s)) return s;
    if (Date.now() > until) throw new Error(`screen never matched ${re}:\n${s}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

describe.runIf(requirePrograms('tmux'))('svcmail setup in a terminal (ink wizard)', () => {
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

    await waitFor(/Mail domain/, 60_000); // the CLI's start-up, on a machine as busy as the full suite makes it
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
    expect(stored).toMatchObject({
      'mail:host': 'mail.example.test',
      'mail:base_url': 'https://mail.example.test',
      'mail:auth_server_url': 'http://127.0.0.1:9',
      'auth:secret': SECRET,
      'auth:options:audience': 'example.test',
      'auth:options:issuer': 'auth.example.test',
    });
    expect(stored['redis:url']).toBeUndefined();
    expect(stored['mail:transport:ingest:secret']).toMatch(/^[\w-]{16,}$/);
    expect(existsSync(join(dir, 'data/pki/ca/ca.crt'))).toBe(true);
    expect(existsSync(join(dir, 'data/dkim/example.test.mail.key'))).toBe(true);
  }, 120_000);

  it('a proposed default is replaced by what is typed, kept on Enter, cleared by Backspace, and edited after →', async () => {
    const sub = mkdtempSync(join(dir, 'defaults-'));
    const conf = join(sub, 'svcmail.conf');
    const s = 'wiz-defaults';
    const keys = (...k: string[]) => tmux('send-keys', '-t', s, ...k);
    const type = (text: string) => tmux('send-keys', '-t', s, '-l', text);
    const until = (re: RegExp, ms?: number) => waitFor(re, ms, s);
    const cmd = `CI=false NODE_ENV=production SVCMAIL_CONFIG= ${process.execPath} ${CLI} --config ${conf} setup; echo "EXIT=$?"; sleep 60`;
    expect(tmux('new-session', '-d', '-s', s, '-x', '160', '-y', '50', cmd).status).toBe(0);

    await until(/Mail domain/, 60_000);
    type('example.test');
    keys('Enter');
    // Typing into the untouched proposal replaces it, as a placeholder would (one key, then the rest).
    await until(/Host name of this server.*\n.*› mail\.example\.test.*Enter keeps it, typing replaces it/);
    type('m');
    await until(/› m\s/);
    type('x.example.test');
    const replaced = await until(/› mx\.example\.test\s/);
    expect(replaced).not.toMatch(/mail\.example\.testm/);
    expect(replaced).not.toMatch(/Enter keeps it/);
    keys('Enter');
    // Enter keeps a proposal (derived from the host just typed).
    await until(/Public base URL.*\n.*› https:\/\/mx\.example\.test/);
    keys('Enter');
    // A paste into the proposal replaces it too.
    await until(/Sign-in service URL.*\n.*› https:\/\/auth\.example\.test/);
    type('http://127.0.0.1:9');
    await until(/› http:\/\/127\.0\.0\.1:9\s/);
    keys('Enter');
    // → takes the proposal for editing: what is typed then is appended.
    await until(/Token audience.*\n.*› example\.test/);
    keys('Right');
    type('.edited');
    await until(/› example\.test\.edited\s/);
    keys('Enter');
    // Backspace on the proposal clears it.
    await until(/Token issuer.*\n.*› 127\.0\.0\.1/);
    keys('BSpace');
    await until(/Token issuer.*\n› *\n/); // capture-pane drops the trailing blanks (the cursor)
    type('auth.example.test');
    keys('Enter');
    await until(/Secret shared with the sign-in service/);
    type(SECRET);
    keys('Enter');
    await until(/PostgreSQL URL/);
    keys('Enter');
    await until(/Redis URL/);
    keys('Enter');

    const done = await until(/EXIT=\d+/, 60_000);
    expect(done).toMatch(/EXIT=0/);
    expect(JSON.parse(readFileSync(conf, 'utf8'))).toMatchObject({
      'mail:host': 'mx.example.test',
      'mail:base_url': 'https://mx.example.test',
      'mail:auth_server_url': 'http://127.0.0.1:9',
      'auth:options:audience': 'example.test.edited',
      'auth:options:issuer': 'auth.example.test',
    });
  }, 120_000);
});
