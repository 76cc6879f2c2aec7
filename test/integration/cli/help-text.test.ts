// `svcmail admin <resource> --help`, spawned as an administrator runs it: the generated command
// descriptions read as English, with the singular noun ("create a domain", not "create a domains record").
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ADMIN_GROUPS } from '../../../cli/admin/groups.js';

const BIN = fileURLToPath(new URL('../../../bin/svcmail.js', import.meta.url));

function help(args: string[]): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args, '--help'], {
      env: { ...process.env, SVCMAIL_CONFIG: '' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.on('close', (code) => resolve({ code, stdout })); // 'close': after stdout is drained
  });
}

/** "  create [options] <name>  create a domain" → { create: 'create a domain' } */
function commandLines(text: string): Record<string, string> {
  const from = text.indexOf('\nCommands:\n');
  expect(from, text).toBeGreaterThan(0);
  const out: Record<string, string> = {};
  let last = '';
  for (const line of text.slice(from + 11).split('\n')) {
    const m = /^ {2}(\S+)(?: \S+)*? {2,}(.+)$/.exec(line);
    if (m) out[(last = m[1])] = m[2].trim();
    else if (/^ {4,}\S/.test(line) && last) out[last] += ` ${line.trim()}`; // wrapped at 80 columns
  }
  return out;
}

const EXPECTED: Record<string, Record<string, string>> = {
  domains: {
    list: 'list the domains',
    show: 'show one domain',
    create: 'create a domain',
    update: 'change fields of a domain',
    delete: 'delete a domain',
  },
  mailboxes: { list: 'list the mailboxes', show: 'show one mailbox (administrative details; audited)', create: 'create a mailbox' },
  lists: {
    list: 'list the distribution lists',
    show: 'show one distribution list',
    create: 'create a distribution list',
    update: 'change fields of a distribution list',
    delete: 'delete a distribution list',
  },
  'transport-rules': {
    list: 'list the transport rules',
    show: 'show one transport rule',
    create: 'create a transport rule',
    update: 'change fields of a transport rule',
    delete: 'delete a transport rule',
  },
  quarantine: {
    list: 'list the quarantined messages',
    show: 'show one quarantined message',
    delete: 'delete a quarantined message',
    headers: 'print the header block of a quarantined message',
  },
  'ingest-queue': {
    list: 'list the ingest queue entries',
    show: 'show one ingest queue entry',
    delete: 'delete an ingest queue entry',
    retry: 'queue a failed ingest queue entry again',
  },
  'audit-log': { list: 'list the audit log entries (newest first)', show: 'show one audit log entry' },
  devices: {
    list: 'list the devices',
    show: 'show one device',
    delete: 'delete a device',
    wipe: 'wipe the device at its next sync (audited); it is refused afterwards until unblocked',
    unblock: 'let a blocked or wiped device sync again (it provisions anew and starts every folder over; audited)',
    inspect: 'why a device does not have a message: folder synced, sync key, filter window, the item in its collection',
  },
};

describe.concurrent('svcmail admin <resource> --help', { timeout: 120_000 }, () => {
  it('covers every resource the admin CLI generates commands for', () => {
    expect(Object.keys(EXPECTED).sort()).toEqual(ADMIN_GROUPS.map((g) => g.name).sort());
  });

  it.each(ADMIN_GROUPS.map((g) => g.name))('%s: each generated command reads as English with the singular noun', async (name) => {
    const r = await help(['admin', name]);
    expect(r.code).toBe(0);
    const lines = commandLines(r.stdout);
    expect(lines).toMatchObject(EXPECTED[name]);
    for (const verb of ['list', 'show', 'create', 'update', 'delete']) {
      const text = lines[verb];
      if (text === undefined) continue;
      // The old generated forms: "create a domains record", "one audit-log record", "list ingest-queue".
      expect(text, verb).not.toMatch(/\brecord\b/);
      expect(text, verb).not.toMatch(new RegExp(`\\b(a|an|one) ${name}\\b`));
      // An article before a plural ("a domains", "an entries").
      expect(text, verb).not.toMatch(/\b(a|an|one) [a-z ]*\b(domains|mailboxes|lists|rules|messages|entries)\b/);
    }
  });
});
