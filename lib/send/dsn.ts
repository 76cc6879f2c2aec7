import { randomUUID } from 'node:crypto';
import MimeNode from 'nodemailer/lib/mime-node/index.js';
import { fileMessage, parseMessage, storeRaw } from '../mail/index.js';
import type { Deps } from '../context/index.js';
import { dkimSign } from './dkim.js';
import type { Refused } from './models.js';

const domainOf = (a: string) => a.slice(a.lastIndexOf('@') + 1).toLowerCase();

export interface ReportInput {
  /** The sender: their mailbox gets the report in its Inbox. */
  mailboxUid: string;
  to: string;
  subject: string;
  messageId: string;
  /** Header block of the original (text/rfc822-headers part). */
  originalHeaders: string;
  refused: Refused[];
  /** Idempotency: one report per key and mailbox, however often a crashed job re-runs. */
  key: string;
  /** Wording of the human-readable part. */
  intro?: string;
}

/** RFC 3464 delivery status notification (multipart/report, built by nodemailer), DKIM-signed. */
export async function buildReport(deps: Pick<Deps, 'config'>, r: Omit<ReportInput, 'mailboxUid' | 'key'>): Promise<Buffer> {
  const domain = domainOf(r.to) || 'localhost';
  const root = new MimeNode('multipart/report; report-type=delivery-status');
  root.setHeader({
    From: `MAILER-DAEMON@${domain}`,
    To: r.to,
    Subject: `Delivery Status Notification: ${r.subject || '(no subject)'}`.slice(0, 900),
    'Message-ID': `<${randomUUID()}@${domain}>`,
    Date: new Date().toUTCString(),
    'Auto-Submitted': 'auto-replied',
    'In-Reply-To': r.messageId,
  });
  const lines = r.refused.map((x) => `  ${x.rcpt}: ${x.reason}`);
  root
    .createChild('text/plain; charset=utf-8')
    .setContent(`${r.intro ?? 'Your message could not be delivered to these recipients:'}\n\n${lines.join('\n')}\n`);
  const perRcpt = r.refused.map((x) =>
    [
      `Final-Recipient: rfc822; ${x.rcpt}`,
      `Action: ${x.permanent ? 'failed' : 'delayed'}`,
      `Status: ${x.permanent ? '5.0.0' : '4.0.0'}`,
      `Diagnostic-Code: smtp; ${x.reason.replace(/[\r\n]+/g, ' ').slice(0, 900)}`,
    ].join('\r\n'),
  );
  root
    .createChild('message/delivery-status')
    .setContent(
      [`Reporting-MTA: dns; ${domain}`, `Arrival-Date: ${new Date().toUTCString()}`, '', perRcpt.join('\r\n\r\n'), ''].join('\r\n'),
    );
  root.createChild('text/rfc822-headers').setContent(r.originalHeaders);
  const raw = await root.build();
  return (await dkimSign(deps.config, raw, domain)).raw;
}

/** Files a delivery status notification in the sender's Inbox (Spec: Outbound message, row 1). */
export async function fileReport(deps: Deps, r: ReportInput): Promise<string> {
  const raw = await buildReport(deps, r);
  const stored = await storeRaw(deps, raw);
  const filed = await fileMessage(deps, {
    mailboxUid: r.mailboxUid,
    folderRole: 'inbox',
    raw: stored,
    parsed: await parseMessage(raw),
    idempotencyKey: `dsn:${r.key}`,
  });
  return filed.uid;
}

/** The header block of a raw message, for the report's text/rfc822-headers part. */
export function headerBlock(raw: Buffer): string {
  const s = raw.toString('latin1');
  const i = s.search(/\r?\n\r?\n/);
  return i < 0 ? s : s.slice(0, i);
}
