import { copyFileSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { FolderModel, MessageModel, type Folder, type Message } from '../../../lib/mail/index.js';
import type { Deps } from '../../../lib/context/index.js';
import type { Row } from '../../../lib/storage/index.js';
import { deliverRaw } from '../../helpers/messages.js';
import type { TestApi } from '../../helpers/api.js';

export interface Recorder {
  bin: string;
  dir: string;
  log: string;
  /** Messages handed over, in order, with their arguments. */
  runs(): Array<{ args: string[]; eml: string }>;
}

/** A sendmail-compatible recorder (test/integration/send/recorder.sh) in its own directory. */
export function recorder(): Recorder {
  const binDir = mkdtempSync(join(tmpdir(), 'svcmail-send-bin-'));
  const bin = join(binDir, 'sendmail');
  copyFileSync(new URL('./recorder.sh', import.meta.url), bin);
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-send-rec-'));
  writeFileSync(join(binDir, 'recorder-dir'), dir);
  return {
    bin,
    dir,
    log: join(dir, 'maillog'),
    runs: () =>
      readdirSync(dir)
        .filter((f) => f.endsWith('.args'))
        .sort()
        .map((f) => ({
          args: readFileSync(join(dir, f), 'utf8').trim().split('\n'),
          eml: readFileSync(join(dir, f.replace('.args', '.eml')), 'utf8'),
        })),
  };
}

let n = 0;
/** A draft in the mailbox's Drafts folder, as compose files it (draft flag, raw in the blob store). */
export async function draft(
  api: Pick<TestApi, 'deps'>,
  mailboxUid: string,
  opts: { from: string; to: string[]; subject?: string; body?: string; extra?: string[]; messageId?: string },
) {
  n += 1;
  const raw = [
    `From: ${opts.from}`,
    `To: ${opts.to.join(', ')}`,
    `Subject: ${opts.subject ?? `draft ${n}`}`,
    `Date: ${new Date().toUTCString()}`,
    `Message-ID: ${opts.messageId ?? `<draft-${n}-${Date.now()}@example.test>`}`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    ...(opts.extra ?? []),
    '',
    opts.body ?? `Body of draft ${n}.`,
    '',
  ].join('\r\n');
  return deliverRaw(api as TestApi, mailboxUid, raw, { folderRole: 'drafts', flags: { draft: true, seen: true } });
}

export async function folderByRole(deps: Deps, mailboxUid: string, role: string): Promise<Row<Folder>> {
  return (await deps.store.repo<Folder>(FolderModel).findOne({ mailboxUid, role }))!;
}

export async function messagesIn(deps: Deps, mailboxUid: string, role: string): Promise<Array<Row<Message>>> {
  const f = await folderByRole(deps, mailboxUid, role);
  return deps.store.repo<Message>(MessageModel).list({ filter: { folderUid: f.uid }, limit: 1000 });
}

/** The cloud API double: records each call's key and recipients; answers from a script, then 200. */
export function cloudApi() {
  const calls: Array<{ key: string | undefined; to: string[]; raw: string }> = [];
  const script: Array<(to: string[]) => [number, unknown]> = [];
  const server: Server = createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      const body = JSON.parse(data) as { raw: string; envelopeTo: string[] };
      calls.push({ key: req.headers['idempotency-key'] as string | undefined, to: body.envelopeTo, raw: body.raw });
      const [status, answer] = script.shift()?.(body.envelopeTo) ?? [200, { accepted: body.envelopeTo, refused: [] }];
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    });
  });
  /** Listens on a loopback port and answers the settings that point the api transport at it. */
  const start = async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return {
      'mail:transport:provider': 'api',
      'mail:transport:api:url': `http://127.0.0.1:${(server.address() as { port: number }).port}/send`,
      'mail:transport:api:token': 'tok',
    };
  };
  return { calls, script, server, start };
}
