import { randomUUID } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import type { Deps } from '../context/index.js';
import type { LeaseFields, Row } from '../storage/index.js';
import { emailReplyDigest, type AcmeClient } from './acme.js';
import { installCertificate, moveEnrollment, SigningEnrollmentModel, type EnrollmentState, type SigningEnrollment } from './enrollment.js';

// Spec: Signing-certificate enrolment (backend rfc8823), steps 1-3. The inbound rules hand the CA's
// challenge mail to consumeAcmeChallenge (it is consumed, not filed); the driver job sends the
// reply through the outbound path (which DKIM-signs it), tells the CA, finalizes with the owner's
// CSR and installs the certificate unless the vault was rekeyed meanwhile.

/** The outbound path as the driver needs it (the send feature provides the DKIM-signing one). */
export interface ReplyMailer {
  send(raw: string, envelope: { from: string; to: string[] }): Promise<void>;
}

export interface ChallengeMail {
  mailboxUid: string;
  from: string;
  subject: string;
  messageId: string | null;
  /** Spec: Trusting sender verification — ACME challenges need a verified sender. */
  senderVerified: boolean;
}

const SUBJECT = /^\s*ACME:\s*([A-Za-z0-9_-]{8,200})\s*$/;

const ANSWERED: EnrollmentState[] = ['challenge-answered', 'validating', 'issued', 'installed'];

/**
 * True when the message was the CA's challenge for an open request (the caller then does not file
 * it). The same challenge again (an inbound re-run after a crash) is still consumed. A challenge
 * that arrives while the driver is placing the order (request claimed, CA address not yet stored)
 * throws, so the inbound job retries it instead of filing it.
 */
export async function consumeAcmeChallenge(deps: Pick<Deps, 'store'>, mail: ChallengeMail): Promise<boolean> {
  const m = SUBJECT.exec(mail.subject);
  if (!m || !mail.senderVerified) return false;
  const repo = deps.store.repo<SigningEnrollment>(SigningEnrollmentModel);
  const recs = await repo.list({
    filter: { mailboxUid: mail.mailboxUid, backend: 'rfc8823', state: { $in: ['requested', 'challenge-pending', ...ANSWERED] } },
    limit: 50,
  });
  const fromCa = (r: SigningEnrollment) => String(r.acme?.from ?? '').toLowerCase() === mail.from.toLowerCase();
  if (recs.some((r) => ANSWERED.includes(r.state) && fromCa(r) && r.acme?.tokenPart1 === m[1])) return true;
  const rec = recs.find((r) => r.state === 'challenge-pending' && fromCa(r));
  if (!rec) {
    const placing = recs.some((r) => r.state === 'requested' && ((r as Partial<LeaseFields>).leaseUntil ?? 0) > new Date());
    if (placing) throw new Error('a signing-certificate order is being placed for this mailbox; the challenge is retried');
    return false;
  }
  await moveEnrollment(deps, rec, 'challenge-answered', { acme: { ...rec.acme, tokenPart1: m[1], challengeMessageId: mail.messageId } });
  return true;
}

function replyMessage(rec: SigningEnrollment, digest: string): string {
  const acme = rec.acme as Record<string, string>;
  const domain = rec.address.slice(rec.address.lastIndexOf('@') + 1);
  const lines = [
    `From: <${rec.address}>`,
    `To: <${acme.from}>`,
    `Subject: Re: ACME: ${acme.tokenPart1}`,
    `Message-ID: <${randomUUID()}@${domain}>`,
    `Date: ${new Date().toUTCString()}`,
    ...(acme.challengeMessageId ? [`In-Reply-To: ${acme.challengeMessageId}`, `References: ${acme.challengeMessageId}`] : []),
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=us-ascii',
    'Auto-Submitted: auto-replied',
    '',
    '-----BEGIN ACME RESPONSE-----',
    digest,
    '-----END ACME RESPONSE-----',
    '',
  ];
  return lines.join('\r\n');
}

async function step(
  deps: Pick<Deps, 'store' | 'events' | 'log'>,
  acme: AcmeClient,
  mailer: ReplyMailer,
  rec: Row<SigningEnrollment>,
): Promise<Row<SigningEnrollment>> {
  switch (rec.state) {
    case 'requested': {
      const order = await acme.newOrder(rec.address);
      const ch = await acme.emailChallenge(order.authorizations[0]!);
      return moveEnrollment(deps, rec, 'challenge-pending', {
        acme: { orderUrl: order.url, finalizeUrl: order.finalize, challengeUrl: ch.url, tokenPart2: ch.token, from: ch.from },
      });
    }
    case 'challenge-answered': {
      const a = rec.acme as Record<string, string>;
      await mailer.send(replyMessage(rec, emailReplyDigest(a.tokenPart1!, a.tokenPart2!, await acme.thumbprint())), {
        from: rec.address,
        to: [a.from!],
      });
      await acme.respond(a.challengeUrl!);
      return moveEnrollment(deps, rec, 'validating');
    }
    case 'validating': {
      const a = rec.acme as Record<string, string>;
      let order = await acme.order(a.orderUrl!);
      if (order.status === 'ready') order = await acme.finalize(order, Buffer.from(new x509.Pkcs10CertificateRequest(rec.csr).rawData));
      if (order.status === 'invalid') return moveEnrollment(deps, rec, 'failed', { reason: 'the CA refused the challenge or the request' });
      if (order.status === 'valid' && order.certificate) {
        const chain = await acme.certificate(order.certificate);
        const leaf = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.exec(chain)?.[0];
        if (!leaf) return moveEnrollment(deps, rec, 'failed', { reason: 'the CA answered without a certificate' });
        return installCertificate(deps, rec, leaf, null);
      }
      return rec;
    }
    default:
      return rec; // challenge-pending waits for the inbound rules
  }
}

/** One round of the driver job: claims open rfc8823 requests with a lease and advances each one step. */
export async function driveEnrollments(
  deps: Pick<Deps, 'store' | 'events' | 'log'>,
  acme: AcmeClient,
  mailer: ReplyMailer,
  owner = `driver-${process.pid}`,
  leaseMs = 120_000,
): Promise<number> {
  const repo = deps.store.repo<SigningEnrollment>(SigningEnrollmentModel);
  const claimed = await repo.claim(
    { backend: 'rfc8823', state: { $in: ['requested', 'challenge-answered', 'validating'] } },
    { owner, leaseMs, limit: 20 },
  );
  let moved = 0;
  for (const rec of claimed) {
    let state = rec.state;
    try {
      const after = await step(deps, acme, mailer, rec);
      state = after.state;
      if (after.state !== rec.state) moved++;
    } catch (e) {
      deps.log.warn({ err: (e as Error).message, uid: rec.uid }, 'signing enrolment step failed; retried next round');
    }
    await repo.release(rec.uid, owner).catch(() => undefined);
    void state;
  }
  return moved;
}
