import { fileMessage, parseMessage, storeRaw, type FileRequest } from '../../lib/mail/index.js';
import type { TestApi } from './api.js';

/** Files a raw message into a mailbox the way delivery does: blob once, one parse, one filing. */
export async function deliverRaw(api: TestApi, mailboxUid: string, raw: string | Buffer, opts: Partial<Omit<FileRequest, 'raw' | 'parsed' | 'mailboxUid'>> = {}) {
  const buf = Buffer.isBuffer(raw) ? raw : Buffer.from(raw.replace(/\r?\n/g, '\r\n'));
  return fileMessage(api.deps, { mailboxUid, raw: await storeRaw(api.deps, buf), parsed: await parseMessage(buf), ...opts });
}

export const simpleMail = (n: number, extra = '') => `From: "Carol ${n}" <carol@example.net>
To: alice@example.test
Subject: Hello ${n}
Date: Sun, 22 Nov 2026 10:${String(n % 60).padStart(2, '0')}:00 +0000
Message-ID: <m${n}@example.net>
${extra}
Body of message ${n}.
`;
