import { createHash } from 'node:crypto';
import type { Config } from '../config/index.js';
import type { OutboundHook } from '../mail/index.js';
import type { ReplyMailer } from '../keys/index.js';
import { hasDkimKey } from './dkim.js';

const domainOf = (a: string) => a.slice(a.lastIndexOf('@') + 1).toLowerCase();

/**
 * The rfc8823 driver's mailer (Spec: Signing-certificate enrolment, step 2 — "the service sends the
 * DKIM-signed reply automatically"). The reply takes the outbound hand-off like DSNs and
 * out-of-office replies: the send job adopts it, DKIM-signs it with the From domain's key
 * (relay.ts) and hands it to the transport. The CA accepts only a signed reply (RFC 8823 §3.2), so
 * without a key for the domain nothing is queued: the driver retries next round and logs why.
 * One hand-off per challenge (id from the address and the Subject), however often a round re-runs.
 */
export function acmeReplyMailer(deps: { config: Config; outbound: OutboundHook }, queued?: () => void): ReplyMailer {
  return {
    async send(raw, envelope) {
      const domain = domainOf(envelope.from);
      if (!(await hasDkimKey(deps.config, domain)))
        throw new Error(`no DKIM key for ${domain} (mail:dkim:dir): the ACME reply must be DKIM-signed`);
      const subject = /^Subject:[^\r\n]*/im.exec(raw)?.[0] ?? raw;
      const id = `acme-${createHash('sha256').update(`${envelope.from.toLowerCase()}\0${subject}`).digest('hex').slice(0, 40)}`;
      await deps.outbound.send({
        id,
        kind: 'acme-reply',
        envelopeFrom: envelope.from,
        envelopeTo: envelope.to,
        raw: Buffer.from(raw, 'utf8'),
      });
      queued?.();
    },
  };
}
