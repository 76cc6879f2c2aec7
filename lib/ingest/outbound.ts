import { randomUUID } from 'node:crypto';
import { isApiError } from '../errors/index.js';
import type { Deps } from '../context/index.js';
import type { OutboundHook } from '../mail/index.js';
import type { MailPort } from './mail-port.js';
import { OutboundHandoffModel } from './models.js';
import { wakeWorkers } from './wake.js';

export function recordingOutbound(deps: Pick<Deps, 'store' | 'config' | 'events'>, port: MailPort): OutboundHook {
  return {
    async send(msg) {
      const repo = deps.store.repo<Record<string, unknown>>(OutboundHandoffModel);
      if (msg.id && (await repo.get(msg.id))) return;
      const { ref } = await port.storeRaw(msg.raw);
      try {
        await repo.create({
          ...(msg.id ? { uid: msg.id } : {}),
          kind: msg.kind,
          envelopeFrom: msg.envelopeFrom,
          envelopeTo: msg.envelopeTo,
          rawRef: ref,
          state: 'queued',
        });
      } catch (e) {
        if (!(isApiError(e) && e.code === 'api-112')) throw e;
        return;
      }
      wakeWorkers(deps, 'send'); // the send job relays it
    },
  };
}

const crlf = (lines: string[]) => `${lines.join('\r\n')}\r\n`;

/** A plain RFC 5322 message from the system (the outbound side adds DKIM). */
export function systemMessage(opts: { from: string; to: string; subject: string; body: string; headers?: Record<string, string> }): Buffer {
  const domain = opts.from.slice(opts.from.lastIndexOf('@') + 1) || 'localhost';
  const extra = Object.entries(opts.headers ?? {}).map(([k, v]) => `${k}: ${v}`);
  return Buffer.from(
    crlf([
      `From: ${opts.from}`,
      `To: ${opts.to}`,
      `Subject: ${opts.subject.replace(/[\r\n]+/g, ' ')}`,
      `Date: ${new Date().toUTCString()}`,
      `Message-ID: <${randomUUID()}@${domain}>`,
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: 8bit',
      ...extra,
      '',
      ...opts.body.split(/\r?\n/),
    ]),
    'utf8',
  );
}

/** Spec: an unknown recipient is dropped and a local sender gets a non-delivery report. */
export function nonDeliveryReport(sender: string, recipients: string[], postmasterDomain: string, subject: string): Buffer {
  return systemMessage({
    from: `MAILER-DAEMON@${postmasterDomain}`,
    to: sender,
    subject: `Undeliverable: ${subject || '(no subject)'}`,
    headers: { 'Auto-Submitted': 'auto-replied' },
    body: `Your message could not be delivered to these recipients, which do not exist here:\n\n${recipients.map((r) => `  ${r}`).join('\n')}\n`,
  });
}
