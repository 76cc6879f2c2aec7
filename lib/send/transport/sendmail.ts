import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { closeSync, openSync, readSync, unlinkSync, writeFileSync } from 'node:fs';
import { access, constants } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Transport, TransportRequest, TransportResult } from './port.js';

// sysexits(3): which exit codes of a sendmail-style command mean "refused outright".
const PERMANENT = new Map<number, string>([
  [64, 'EX_USAGE: the command line was refused'],
  [65, 'EX_DATAERR: the message was refused'],
  [67, 'EX_NOUSER: unknown user'],
  [68, 'EX_NOHOST: unknown host'],
  [77, 'EX_NOPERM: permission denied'],
]);
const STDERR_MAX = 4096;

export interface SendmailOptions {
  path: string;
  timeoutMs: number;
}

interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  error?: NodeJS.ErrnoException;
  /** The command had read the whole message when it ended (the file offset it shares with us is at the end). */
  readAll: boolean;
}

/** Whether the shared descriptor's offset is at the end: the child read every byte of its stdin. */
function atEnd(fd: number): boolean {
  try {
    return readSync(fd, Buffer.alloc(1), 0, 1, null) === 0;
  } catch {
    return false;
  }
}

/**
 * The message reaches sendmail from a file, not a pipe: should this process die mid-write, a pipe
 * would end early and sendmail would take a truncated (even empty) message as complete.
 */
function run(opts: SendmailOptions, req: TransportRequest, rcpts: string[]): Promise<RunResult> {
  const file = join(tmpdir(), `svcmail-out-${randomUUID()}.eml`);
  writeFileSync(file, req.raw, { mode: 0o600 });
  const fd = openSync(file, 'r');
  try {
    unlinkSync(file); // the open descriptor keeps it readable; nothing is left behind
  } catch {
    /* removed below at the latest */
  }
  return new Promise((resolve) => {
    // -i: a lone "." line is not the end of the message; "--" ends options so no address is taken as one.
    const child = spawn(opts.path, ['-i', '-f', req.envelopeFrom, '--', ...rcpts], {
      stdio: [fd, 'ignore', 'pipe'],
      env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin' },
    });
    // Our descriptor stays open until the end: the child shares its file offset, which then tells
    // whether the whole message was read (a command killed after that may have queued it).
    let stderr = '';
    let settled = false;
    const finish = (r: Omit<RunResult, 'readAll'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const readAll = atEnd(fd);
      closeSync(fd);
      resolve({ ...r, readAll });
    };
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      finish({ code: null, signal: 'SIGKILL', stderr: `timed out after ${opts.timeoutMs} ms` });
    }, opts.timeoutMs);
    child.stderr!.on('data', (d: Buffer) => {
      if (stderr.length < STDERR_MAX) stderr += d.toString('utf8').slice(0, STDERR_MAX - stderr.length);
    });
    child.on('error', (error: NodeJS.ErrnoException) => finish({ code: null, signal: null, stderr: '', error }));
    child.on('close', (code, signal) => finish({ code, signal, stderr: stderr.trim() }));
  });
}

type Verdict = { ok: true } | { ok: false; permanent: boolean; reason: string; ambiguous?: boolean };

function verdict(r: RunResult): Verdict {
  if (r.error)
    return {
      ok: false,
      permanent: false,
      reason:
        r.error.code === 'ENOENT'
          ? 'the sendmail command was not found (mail:transport:sendmail:path)'
          : `cannot run sendmail: ${r.error.message}`,
    };
  if (r.code === 0) return { ok: true };
  if (r.code !== null && PERMANENT.has(r.code))
    return { ok: false, permanent: true, reason: `${PERMANENT.get(r.code)}${r.stderr ? `: ${r.stderr}` : ''}` };
  if (r.code === null && r.readAll) {
    // Killed (by us after the time limit, or by anyone) after it read the whole message: it may have
    // queued it. Not a temporary failure to retry blind: the send job checks the MTA log or holds it.
    return {
      ok: false,
      permanent: false,
      ambiguous: true,
      reason: `sendmail ended by ${r.signal} after reading the whole message${r.stderr ? ` (${r.stderr})` : ''}: it may or may not have queued it`,
    };
  }
  return {
    ok: false,
    permanent: false,
    reason:
      r.code === null
        ? `sendmail ended by ${r.signal} before reading the whole message${r.stderr ? `: ${r.stderr}` : ''}`
        : `sendmail exit ${r.code}${r.stderr ? `: ${r.stderr}` : ''}`,
  };
}

const refusals = (rcpts: readonly string[], v: Exclude<Verdict, { ok: true }>): TransportResult => ({
  accepted: [],
  refused: rcpts.map((rcpt) => ({ rcpt, reason: v.reason, permanent: v.permanent, ...(v.ambiguous ? { ambiguous: true } : {}) })),
});

/**
 * The default provider: hands the message to a sendmail-style command. One run for all recipients;
 * when that is refused outright and there are several, each recipient is tried alone to tell which
 * ones were refused (sendmail reports one exit code per run).
 */
export function sendmailTransport(opts: SendmailOptions): Transport {
  return {
    name: 'sendmail',
    async send(req): Promise<TransportResult> {
      if (!req.envelopeTo.length) return { accepted: [], refused: [] };
      const first = verdict(await run(opts, req, req.envelopeTo));
      if (first.ok) return { accepted: [...req.envelopeTo], refused: [] };
      if (!first.permanent || req.envelopeTo.length === 1) return refusals(req.envelopeTo, first);
      const result: TransportResult = { accepted: [], refused: [] };
      for (const rcpt of req.envelopeTo) {
        const v = verdict(await run(opts, req, [rcpt]));
        if (v.ok) result.accepted.push(rcpt);
        else result.refused.push(...refusals([rcpt], v).refused);
      }
      return result;
    },
    async check() {
      try {
        await access(opts.path, constants.X_OK);
      } catch {
        throw new Error(
          `${opts.path} is missing or not executable: install an MTA (Debian: apt-get install postfix) or set mail:transport:sendmail:path`,
        );
      }
    },
  };
}
