// Sending a saved draft (Spec: Outbound message states): now (answered after relay), in the
// background (202, the Outbox), or scheduled (the draft's sendAt; 202 state scheduled), and what to
// tell the user about the answer or the refusal.
import { api, ApiFailure, describeError, type FailureDetail } from '../../shared/api.js';

export type SendMode = { kind: 'now' } | { kind: 'background' } | { kind: 'scheduled'; at: Date };

export interface SendAnswer {
  state: string;
  accepted: string[];
  refused: Array<{ rcpt: string; reason: string; permanent: boolean }>;
  pending: string[];
  sendAt?: string;
}

/** Sends the draft; a scheduled send names its time (a plain draft has it already; an encrypted one cannot carry it). */
export const sendDraft = (uid: string, mode: SendMode): Promise<SendAnswer> =>
  api<SendAnswer>(`/api/mail/messages/${encodeURIComponent(uid)}/send`, {
    method: 'POST',
    body: { background: mode.kind === 'background', ...(mode.kind === 'scheduled' ? { sendAt: mode.at.toISOString() } : {}) },
  });

/** One line on what became of a send the server took. */
export function sentSummary(r: SendAnswer): string {
  const refused = r.refused.length ? ` Not accepted: ${r.refused.map((x) => `${x.rcpt} (${x.reason})`).join('; ')}.` : '';
  if (r.state === 'scheduled' && r.sendAt) return `Scheduled: it goes ${new Date(r.sendAt).toLocaleString()} (it waits in Drafts).`;
  if (r.state === 'review') return 'Held for review: an administrator checks it before it goes.';
  if (r.state === 'queued' || r.pending.length) return `Queued in the Outbox: it goes out in the background.${refused}`;
  return `Sent${r.accepted.length ? ` to ${r.accepted.join(', ')}` : ''}.${refused}`;
}

export interface SendFailure {
  headline: string;
  detail: string;
  reasons: FailureDetail[];
}

const HEADLINES: Record<string, string> = {
  'api-102': 'Not sent: you may not send from this address.',
  'api-114': 'Not sent: the outbound scan refused the message (spam or malware).',
  'api-121': 'Not sent: the encryption policy refused the message.',
  'api-115': 'Not sent: no recipient was accepted.',
  'api-108': 'Not sent: the draft was changed elsewhere; open it again from Drafts.',
  'api-109': 'Not sent: too many messages sent in a short time; wait a little and send again.',
};

/** What the compose view shows for a refused send: what happened, the server's words, and each recipient's reason. */
export function sendFailure(e: unknown): SendFailure {
  if (!(e instanceof ApiFailure)) return { headline: 'Not sent.', detail: describeError(e), reasons: [] };
  const headline = (e.code && HEADLINES[e.code]) ?? `Not sent (${e.status}).`;
  return { headline, detail: `${e.message} The message stays in Drafts.`, reasons: e.details };
}
