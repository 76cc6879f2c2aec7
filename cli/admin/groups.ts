// The resources `svcmail admin` scripts, declared once: each gets list, show, create, update and
// delete over its generic routes (Spec: Resources; /api/mail administration). Extra verbs live in
// cli/commands/admin.ts.

export interface AdminGroup {
  /** Subcommand name. */
  name: string;
  path: string;
  summary: string;
  /** One record in words, singular ("transport rule"): the generated help reads "create a transport rule". */
  noun: string;
  /** All of them in words, for "list the …" (default: the noun with an s). */
  plural?: string;
  /** Field that names a record on the command line (besides its uid). */
  key?: string;
  /** The create command's positional argument fills this field. */
  createArg?: string;
  columns: string[];
  /** Reads go through ?scope=admin (mailboxes: administrative details only, audited). */
  adminScope?: boolean;
  verbs: Array<'list' | 'show' | 'create' | 'update' | 'delete'>;
}

export const ADMIN_GROUPS: AdminGroup[] = [
  {
    name: 'domains',
    path: '/api/mail/domains',
    summary: 'mail domains served here',
    noun: 'domain',
    key: 'name',
    createArg: 'name',
    columns: ['name', 'enabled', 'verified', 'aliases', 'dkimSelector', 'uid'],
    verbs: ['list', 'show', 'create', 'update', 'delete'],
  },
  {
    name: 'mailboxes',
    path: '/api/mail/mailboxes',
    summary: 'mailboxes (administrative details only: addresses, owners, quota)',
    noun: 'mailbox',
    plural: 'mailboxes',
    key: 'address',
    createArg: 'address',
    columns: ['address', 'aliases', 'owners', 'quotaBytes', 'usedBytes', 'uid'],
    adminScope: true,
    verbs: ['list', 'show', 'create'],
  },
  {
    name: 'lists',
    path: '/api/mail/distribution-lists',
    summary: 'distribution lists',
    noun: 'distribution list',
    key: 'address',
    createArg: 'address',
    columns: ['address', 'name', 'members', 'uid'],
    verbs: ['list', 'show', 'create', 'update', 'delete'],
  },
  {
    name: 'transport-rules',
    path: '/api/mail/transport-rules',
    summary: 'transport rules (run once per inbound message)',
    noun: 'transport rule',
    key: 'name',
    createArg: 'name',
    columns: ['name', 'enabled', 'priority', 'action', 'match', 'uid'],
    verbs: ['list', 'show', 'create', 'update', 'delete'],
  },
  {
    name: 'quarantine',
    path: '/api/mail/quarantine',
    summary: 'quarantined inbound messages',
    noun: 'quarantined message',
    columns: ['uid', 'reason', 'recipient', 'envelopeFrom', 'subject', 'createdAt'],
    verbs: ['list', 'show', 'delete'],
  },
  {
    name: 'ingest-queue',
    path: '/api/mail/ingest-queue',
    summary: 'the inbound queue (queued, failed entries)',
    noun: 'ingest queue entry',
    plural: 'ingest queue entries',
    verbs: ['list', 'show', 'delete'],
    columns: ['uid', 'state', 'attempts', 'recipient', 'envelopeFrom', 'lastError'],
  },
  {
    name: 'devices',
    path: '/api/mail/devices',
    summary: 'mobile-sync (ActiveSync) devices: last sync, policy, wipe and block state, synced folders',
    noun: 'device',
    columns: ['deviceId', 'deviceType', 'userUid', 'lastSyncAt', 'provisioned', 'wipe', 'blocked', 'uid'],
    verbs: ['list', 'show', 'delete'],
  },
  {
    name: 'audit-log',
    path: '/api/mail/audit-log',
    summary: 'the audit log',
    noun: 'audit log entry',
    plural: 'audit log entries (newest first)',
    columns: ['createdAt', 'actor', 'action', 'resource', 'resourceUid'],
    verbs: ['list', 'show'],
  },
];

type Verb = AdminGroup['verbs'][number];

const article = (noun: string) => `${/^[aeiou]/i.test(noun) ? 'an' : 'a'} ${noun}`;

/** The help line of a generated command, in plain English: "list the transport rules", "delete a mailbox". */
export function verbDescription(grp: AdminGroup, verb: Verb): string {
  switch (verb) {
    case 'list':
      return `list the ${grp.plural ?? `${grp.noun}s`}`;
    case 'show':
      return `show one ${grp.noun}${grp.adminScope ? ' (administrative details; audited)' : ''}`;
    case 'create':
      return `create ${article(grp.noun)}`;
    case 'update':
      return `change fields of ${article(grp.noun)}`;
    case 'delete':
      return `delete ${article(grp.noun)}`;
  }
}

/** Singleton policies under /api/system (read by anyone signed in, written by administrators, audited). */
export const POLICIES = ['encryption-policy', 'mailbox-policy', 'retention-policy'] as const;
