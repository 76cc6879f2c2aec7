// What counts as the owner's data in an answer, and the few answers that show some of it to someone
// other than the owner on purpose. Every other answer, to anyone but the owner and the reader she
// shared with, must contain none of it.
import type { ApiOperation, CallerKind } from './operations.js';
import type { World } from './world.js';

/** content: subject, body and names she wrote; mailbox: her mailbox uid; address: her address. */
export type Marker = 'content' | 'mailbox' | 'address';

export interface LeakAllowance {
  match(op: ApiOperation): boolean;
  callers: readonly CallerKind[];
  markers: readonly Marker[];
  why: string;
}

const ADMINS: readonly CallerKind[] = ['admin-elevated', 'admin-stale'];
const SIGNED_IN: readonly CallerKind[] = ['other', 'admin-not-elevated', 'admin-stale', 'admin-elevated'];
const EVERYONE: readonly CallerKind[] = [
  'no-token',
  'bad-signature',
  'wrong-audience',
  'wrong-issuer',
  'over-long',
  'elevated-future',
  'expired',
  ...SIGNED_IN,
];

/** Each entry is a product decision with its spec reference; the test asserts the list stays short. */
export const LEAK_ALLOWANCES: readonly LeakAllowance[] = [
  {
    match: (op) => Boolean(op.adminScope),
    callers: ['admin-elevated'],
    markers: ['mailbox', 'address'],
    why: 'Spec: Roles and elevation — ?scope=admin is the administrative view of a mailbox (trusted role, fresh elevation, audited): its uid and address, never its mail',
  },
  {
    match: (op) => op.path.startsWith('/api/mail/audit-log'),
    callers: ADMINS,
    markers: ['mailbox', 'address'],
    why: 'the audit log records administrative changes, among them the administrator creating this mailbox (uid and address); never mail content',
  },
  {
    match: (op) => op.path.startsWith('/api/mail/ingest-queue'),
    callers: ['admin-elevated'],
    markers: ['mailbox', 'address'],
    why: 'an ingest-queue entry names the recipient it delivers to (sensitive administration); never the message',
  },
  {
    match: (op) => op.path.startsWith('/api/mail/quarantine'),
    callers: ['admin-elevated'],
    markers: ['content', 'mailbox', 'address'],
    why: 'Spec: Inbound message — a quarantined message waits in the admin quarantine queue; its sender, subject and headers are what the administrator reviews',
  },
  {
    match: (op) => op.path.startsWith('/api/admin/impersonation-sessions'),
    callers: ['admin-elevated'],
    markers: ['content', 'mailbox', 'address'],
    why: 'Spec: Roles and elevation — administrators view an account by audited impersonation; the owner approved this session',
  },
  {
    match: (op) => op.path.startsWith('/api/escrow/'),
    callers: ['admin-elevated'],
    markers: ['mailbox'],
    why: 'escrow holders assign mailboxes to their scope and name them as matter custodians (by uid; the escrow audit log records it)',
  },
  {
    match: (op) =>
      /^\/api\/escrow\/(matter-search|access-requests\/\{id\}\/material|matter-export-requests\/\{id\}\/(manifest|download))$/.test(
        op.path,
      ),
    callers: ['admin-elevated'],
    markers: ['content', 'address'],
    why: "Spec: Key escrow access — with M holder approvals (the fixture request has them) the holders search, export and unwrap the matter's mail",
  },
  {
    match: (op) => op.operationId === 'mail_directory',
    callers: SIGNED_IN,
    markers: ['address'],
    why: 'the directory lists the addresses of the deployment to every signed-in user (recipient lookup)',
  },
  {
    match: (op) => op.path === '/api/mail/calendar-share-links/feed/{token}',
    callers: EVERYONE,
    markers: ['content'],
    why: 'the share-link token is the credential: the owner published this read-only feed',
  },
];

/** Which of the owner's markers an answer shows. */
export function markersIn(text: string, w: World): Marker[] {
  const found: Marker[] = [];
  if (text.includes(w.markers.content) || text.includes(w.markers.body)) found.push('content');
  if (text.includes(w.markers.mailbox)) found.push('mailbox');
  if (text.toLowerCase().includes(w.markers.address)) found.push('address');
  return found;
}

/** The markers of an answer that no allowance covers (an empty list: no leak). */
export function leaksIn(op: ApiOperation, caller: CallerKind, text: string, w: World): Marker[] {
  const allowed = new Set(LEAK_ALLOWANCES.filter((a) => a.match(op) && a.callers.includes(caller)).flatMap((a) => a.markers));
  return markersIn(text, w).filter((m) => !allowed.has(m));
}
