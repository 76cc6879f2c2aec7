// Dovecot LMTP as the delivery peer of the ingest benchmark: Maildir, mail_fsync=optimized, run
// from a scratch directory; a small LMTP client (one connection per sender, one transaction at a time).
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const dovecotInstalled = (): boolean => existsSync('/usr/sbin/dovecot');

export function startDovecot(port: number): { dir: string; stop(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-dovecot-'));
  for (const d of ['run', 'state', 'mail']) mkdirSync(join(dir, d));
  chmodSync(join(dir, 'mail'), 0o777); // deliveries run as nobody (Dovecot refuses uid 0)
  chmodSync(dir, 0o755);
  writeFileSync(
    join(dir, 'dovecot.conf'),
    `base_dir = ${dir}/run
state_dir = ${dir}/state
log_path = ${dir}/dovecot.log
protocols = lmtp
listen = 127.0.0.1
ssl = no
mail_location = maildir:${dir}/mail/%n
mail_fsync = optimized
first_valid_uid = 0
default_internal_user = root
default_internal_group = root
default_login_user = root
userdb {
  driver = static
  args = uid=65534 gid=65534 home=${dir}/mail/%n
}
passdb {
  driver = static
  args = nopassword=y
}
service lmtp {
  inet_listener lmtp {
    address = 127.0.0.1
    port = ${port}
  }
  process_min_avail = 2
}
service anvil {
  chroot =
}
`,
  );
  const r = spawnSync('taskset', ['-c', '0', 'dovecot', '-c', join(dir, 'dovecot.conf')], { stdio: 'ignore' }); // the daemon keeps inherited pipes open
  if (r.status !== 0) throw new Error(`dovecot did not start (exit ${r.status})`);
  return {
    dir,
    stop() {
      const pid = Number(readFileSync(join(dir, 'run', 'master.pid'), 'utf8'));
      if (pid) process.kill(pid, 'SIGTERM');
      if (!process.env.LMTP_DEBUG) setTimeout(() => rmSync(dir, { recursive: true, force: true }), 1000).unref();
    },
  };
}

/** One LMTP session: line replies, multi-line aware. */
export class LmtpClient {
  #sock: Socket;
  #buf = '';
  #waiters: Array<(line: string) => void> = [];
  #lines: string[] = [];
  constructor(port: number) {
    this.#sock = connect({ host: '127.0.0.1', port });
    this.#sock.setNoDelay(true);
    this.#sock.on('data', (d) => {
      this.#buf += d.toString('latin1');
      let i: number;
      while ((i = this.#buf.indexOf('\r\n')) >= 0) {
        const line = this.#buf.slice(0, i);
        this.#buf = this.#buf.slice(i + 2);
        const w = this.#waiters.shift();
        if (w) w(line);
        else this.#lines.push(line);
      }
    });
  }

  #line(): Promise<string> {
    const l = this.#lines.shift();
    return l !== undefined ? Promise.resolve(l) : new Promise((r) => this.#waiters.push(r));
  }

  async reply(): Promise<string> {
    for (;;) {
      const l = await this.#line();
      if (l[3] !== '-') return l;
    }
  }

  async start(): Promise<void> {
    await this.reply();
    this.#sock.write('LHLO bench\r\n');
    await this.reply();
  }

  async deliver(from: string, rcpts: string[], raw: Buffer): Promise<string[]> {
    this.#sock.write(`MAIL FROM:<${from}>\r\n${rcpts.map((r) => `RCPT TO:<${r}>\r\n`).join('')}DATA\r\n`);
    for (let i = 0; i < rcpts.length + 2; i++) {
      const r = await this.reply();
      if (process.env.LMTP_DEBUG) process.stderr.write(`${r}\n`);
    }
    const text = raw.toString('latin1').replace(/\r?\n/g, '\r\n').replace(/^\./gm, '..');
    this.#sock.write(Buffer.from(`${text}${text.endsWith('\r\n') ? '' : '\r\n'}.\r\n`, 'latin1'));
    const out: string[] = [];
    for (let i = 0; i < rcpts.length; i++) out.push(await this.reply());
    return out;
  }

  close(): void {
    this.#sock.end('QUIT\r\n');
  }
}
