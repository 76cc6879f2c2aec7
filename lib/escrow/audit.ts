import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { Config } from '../config/index.js';
import { ApiError } from '../errors/index.js';
import type { Store } from '../storage/index.js';
import { EscrowAuditModel, type EscrowAuditEntry } from './models.js';

// Spec: Escrow records — each audit entry carries the hash of the previous entry, keyed
// HMAC-SHA256 under mail:escrow:audit_hmac_key; without that key the chain is plain SHA-256.

const GENESIS = '0'.repeat(64);

/** Canonical JSON: keys sorted at every level, so the same entry always hashes the same. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object' && !(v instanceof Date)) {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v instanceof Date ? v.toISOString() : v);
}

type Hashed = Pick<EscrowAuditEntry, 'seq' | 'actor' | 'action' | 'scopeUid' | 'details' | 'at' | 'prevHash'>;

function digest(config: Config, alg: EscrowAuditEntry['alg'], e: Hashed): string {
  // scopeUid is hashed when set; entries written before it existed keep their hashes.
  const body = canonical({
    seq: e.seq,
    actor: e.actor,
    action: e.action,
    ...(e.scopeUid ? { scopeUid: e.scopeUid } : {}),
    details: e.details,
    at: e.at,
    prevHash: e.prevHash,
  });
  if (alg === 'hmac-sha256') return createHmac('sha256', config.get('mail:escrow:audit_hmac_key')).update(body).digest('hex');
  return createHash('sha256').update(body).digest('hex');
}

export interface EscrowAuditInput {
  actor: string;
  action: string;
  /** The scope the action concerns; its holders read the entry. */
  scopeUid: string | null;
  details?: Record<string, unknown>;
}

/** Appends an entry after the last one; concurrent appenders retry on the unique sequence number. */
export async function appendEscrowAudit(store: Store, config: Config, input: EscrowAuditInput): Promise<EscrowAuditEntry> {
  const repo = store.repo<EscrowAuditEntry>(EscrowAuditModel);
  const alg = config.get('mail:escrow:audit_hmac_key') ? 'hmac-sha256' : 'sha256';
  for (let attempt = 0; attempt < 20; attempt++) {
    const [last] = await repo.list({ sort: [{ field: 'seq', dir: 'desc' }], limit: 1 });
    const entry = {
      seq: (last?.seq ?? 0) + 1,
      actor: input.actor,
      action: input.action,
      scopeUid: input.scopeUid,
      details: input.details ?? {},
      at: new Date().toISOString(),
      prevHash: last?.hash ?? GENESIS,
      alg,
    } as const;
    try {
      return await repo.create({ ...entry, hash: digest(config, alg, entry) });
    } catch (e) {
      if (!(e instanceof ApiError && e.code === 'api-112')) throw e;
    }
  }
  throw new ApiError('api-113', 'the escrow audit log is too busy; retry');
}

export interface ChainVerdict {
  ok: boolean;
  entries: number;
  /** The first entry whose link or hash does not hold. */
  brokenAt?: { seq: number; reason: string };
}

const same = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** Walks the chain from the start; reports the first broken link. */
export async function verifyEscrowAudit(store: Store, config: Config): Promise<ChainVerdict> {
  const repo = store.repo<EscrowAuditEntry>(EscrowAuditModel);
  let prev = GENESIS;
  let expectSeq = 1;
  let n = 0;
  for (let page = 0; ; page++) {
    const rows = await repo.list({ sort: [{ field: 'seq', dir: 'asc' }], limit: 1000, offset: page * 1000 });
    for (const e of rows) {
      n += 1;
      if (e.seq !== expectSeq)
        return { ok: false, entries: n, brokenAt: { seq: e.seq, reason: `expected entry ${expectSeq}: an entry is missing` } };
      if (!same(e.prevHash, prev))
        return { ok: false, entries: n, brokenAt: { seq: e.seq, reason: 'does not link to the previous entry' } };
      if (e.alg === 'hmac-sha256' && !config.get('mail:escrow:audit_hmac_key'))
        return { ok: false, entries: n, brokenAt: { seq: e.seq, reason: 'keyed entry, but mail:escrow:audit_hmac_key is not set' } };
      if (!same(e.hash, digest(config, e.alg, e)))
        return { ok: false, entries: n, brokenAt: { seq: e.seq, reason: 'its content does not match its hash' } };
      prev = e.hash;
      expectSeq += 1;
    }
    if (rows.length < 1000) break;
  }
  return { ok: true, entries: n };
}
