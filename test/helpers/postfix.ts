import { freePort } from './ports.js';
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requirePrograms, requireRoot } from './peers.js';

export interface PostfixInstance {
  /** A sendmail-style command bound to this instance (for mail:transport:sendmail:path). */
  sendmail: string;
  dir: string;
  /** Messages Postfix relayed to its smtp-sink, as raw bytes. */
  received(): Buffer[];
  waitFor(count: number, timeoutMs?: number): Promise<Buffer[]>;
  stop(): Promise<void>;
}

/** Whether Debian's postfix is installed and the tests run as root; when not, one line and a skip, or in CI a failure (./peers.ts). */
export function postfixAvailable(): boolean {
  return requirePrograms('postfix') && requireRoot('a private Postfix instance');
}

/**
 * A private Postfix instance (own main.cf, queue and log under a temp dir; nothing listens on port
 * 25) that relays everything to Postfix's own smtp-sink, which writes each message to a file.
 * Needs root (tests run as root on these machines) and Debian's postfix package.
 */
export async function startPostfix(): Promise<PostfixInstance> {
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-postfix-'));
  chmodSync(dir, 0o755);
  const sinkDir = join(dir, 'sink');
  mkdirSync(sinkDir);
  mkdirSync(join(dir, 'queue'));
  mkdirSync(join(dir, 'data'));
  chownSync(join(dir, 'data'), Number(execFileSync('id', ['-u', 'postfix']).toString().trim()), 0);
  const port = await freePort();
  const masterSrc = existsSync('/usr/share/postfix/master.cf.dist') ? '/usr/share/postfix/master.cf.dist' : '/etc/postfix/master.cf';
  copyFileSync(masterSrc, join(dir, 'master.cf'));
  writeFileSync(join(dir, 'master.cf'), readFileSync(join(dir, 'master.cf'), 'utf8').replace(/^smtp\s+inet.*$/m, ''));
  writeFileSync(
    join(dir, 'main.cf'),
    [
      'compatibility_level = 3.6',
      `queue_directory = ${dir}/queue`,
      `data_directory = ${dir}/data`,
      'mail_owner = postfix',
      'setgid_group = postdrop',
      'inet_interfaces = loopback-only',
      'inet_protocols = ipv4',
      'myhostname = svcmail-test.localdomain',
      'mydestination =',
      `relayhost = [127.0.0.1]:${port}`,
      'smtp_tls_security_level = none',
      `maillog_file = ${dir}/maillog`,
      `maillog_file_prefixes = ${dir}`,
      'queue_run_delay = 1s',
      'minimal_backoff_time = 1s',
      'maximal_backoff_time = 2s',
      '',
    ].join('\n'),
  );
  const sink: ChildProcess = spawn('/usr/sbin/smtp-sink', ['-d', `${sinkDir}/%M.`, '-u', 'root', `127.0.0.1:${port}`, '10'], {
    stdio: 'ignore',
  });
  execFileSync('/usr/sbin/postfix', ['-c', dir, 'start'], { stdio: 'pipe' });
  const sendmail = join(dir, 'sendmail');
  writeFileSync(sendmail, `#!/bin/sh\nMAIL_CONFIG=${dir} exec /usr/sbin/sendmail "$@"\n`, { mode: 0o755 });
  const received = () =>
    readdirSync(sinkDir)
      .sort()
      .map((f) => readFileSync(join(sinkDir, f)));
  return {
    sendmail,
    dir,
    received,
    async waitFor(count, timeoutMs = 15_000) {
      const until = Date.now() + timeoutMs;
      // smtp-sink creates a message's file before it has written it: a message counts once its
      // file is not empty and has not grown since the previous look.
      let sizes = '';
      while (Date.now() < until) {
        const got = received();
        const now = got.map((m) => m.length).join(',');
        if (got.length >= count && got.every((m) => m.length > 0) && now === sizes) return got;
        sizes = now;
        await new Promise((r) => setTimeout(r, 200));
      }
      throw new Error(`Postfix relayed ${received().length} of ${count} messages in ${timeoutMs} ms; see ${dir}/maillog`);
    },
    async stop() {
      try {
        execFileSync('/usr/sbin/postfix', ['-c', dir, 'stop'], { stdio: 'pipe' });
      } catch {
        /* already stopped */
      }
      sink.kill('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
