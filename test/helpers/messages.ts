import { fileMessage, parseMessage, storeRaw, type FileRequest } from '../../lib/mail/index.js';
import type { TestApi } from './api.js';

type FileOptions = Partial<Omit<FileRequest, 'raw' | 'parsed' | 'mailboxUid'>>;

/** The filing request delivery makes of a raw message: blob stored once, one parse. */
export async function fileRequest(api: TestApi, mailboxUid: string, raw: string | Buffer, opts: FileOptions = {}): Promise<FileRequest> {
  const buf = Buffer.isBuffer(raw) ? raw : Buffer.from(raw.replace(/\r?\n/g, '\r\n'));
  return { mailboxUid, raw: await storeRaw(api.deps, buf), parsed: await parseMessage(buf), ...opts };
}

/** Files a raw message into a mailbox the way delivery does: blob once, one parse, one filing. */
export async function deliverRaw(api: TestApi, mailboxUid: string, raw: string | Buffer, opts: FileOptions = {}) {
  return fileMessage(api.deps, await fileRequest(api, mailboxUid, raw, opts));
}

export const simpleMail = (n: number, extra = '') => `From: "Carol ${n}" <carol@example.net>
To: alice@example.test
Subject: Hello ${n}
Date: Sun, 22 Nov 2026 10:${String(n % 60).padStart(2, '0')}:00 +0000
Message-ID: <m${n}@example.net>
${extra}
Body of message ${n}.
`;
