import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import {
  IngestEntryModel,
  deliverEntry,
  prepare,
  type IngestEntry,
  type PrepareCache,
  type RoundWrites,
  type WorkerDeps,
} from '../ingest/index.js';
import { recordCorrespondents, senderOf } from '../ingest/index.js';
import { readRound } from '../ingest/index.js';
import type { Patch, Row, Store } from '../storage/index.js';
import { countEvent, type CounterName } from '../settings/index.js';
import { MessageModel, type Message } from '../mail/index.js';

export interface ScanRound {
  claimed: number;
  finished: number;
  retried: number;
  failed: number;
}

/** The verdict class of a finished entry for svcmail_scan_verdicts_total (Spec: Inbound message state table). */
export function verdictClass(v: Record<string, unknown> | null | undefined): 'clean' | 'spam' | 'suspect' | 'virus' | 'failed' | null {
  if (!v) return null;
  if (v.virus) return 'virus';
  if (v.virusScanFailed || (Array.isArray(v.symbols) && v.symbols.includes('SCAN_ENGINE_UNAVAILABLE'))) return 'failed';
  return v.spam === 'spam' || v.spam === 'suspect' ? v.spam : 'clean';
}

export const workerId = (): string => `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;

/** The mailboxes' settings a round reads once for all its entries. */
type RoundReads = Awaited<ReturnType<typeof readRound>>;

const inKeyOrder = <V>(m: Map<string, V>): V[] => [...m.keys()].sort().map((k) => m.get(k)!);

async function pool<T>(items: T[], size: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(size, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]);
    }),
  );
}

/** What a round gathers while its entries are delivered, written once at its end (counters, correspondents, full-text documents) and its events. */
interface RoundState {
  // Counted where the job decides, once per entry, and written once per round (not per message).
  counts: Map<string, { name: CounterName; labels: Record<string, string>; n: number }>;
  correspondents: Map<string, { mailboxUid: string; address: string; n: number }>;
  texts: Map<string, string>;
  /** The RoundWrites the round's deliveries write into. */
  writes: RoundWrites;
  /** Adds one to a counter. */
  count(name: CounterName, labels: Record<string, string>): void;
  /** Sends the events of the copies filed so far. */
  sendEvents(): void;
}

/** A round's empty collections of counters, correspondents, texts and events to publish. */
function roundState(): RoundState {
  const counts: RoundState['counts'] = new Map();
  const correspondents: RoundState['correspondents'] = new Map();
  const texts = new Map<string, string>();
  // The round's copies are filed with asynchronous commits: their events go out only once a
  // synchronous commit came after them (the round's closing one, or a failed entry's
  // release), or, had that commit failed, once the attempt is over (the copies are committed and
  // the next synchronous commit of any writer makes them durable).
  const published: Array<() => void> = [];
  return {
    counts,
    correspondents,
    texts,
    writes: {
      publish(send) {
        published.push(send);
      },
      correspondent(mailboxUid, address) {
        const key = `${mailboxUid}\0${address}`;
        const c = correspondents.get(key) ?? { mailboxUid, address, n: 0 };
        c.n += 1;
        correspondents.set(key, c);
      },
      text(messageUid, document) {
        texts.set(messageUid, document);
      },
    },
    count(name, labels) {
      const key = `${name}|${JSON.stringify(labels)}`;
      const c = counts.get(key) ?? { name, labels, n: 0 };
      c.n += 1;
      counts.set(key, c);
    },
    sendEvents() {
      for (const send of published.splice(0)) send();
    },
  };
}

/** Claims the queued entries that are due, oldest first, with a lease for this owner. */
function claimDue(deps: WorkerDeps, owner: string, limit: number): Promise<Array<Row<IngestEntry>>> {
  const cfg = deps.config;
  return deps.store.repo<IngestEntry>(IngestEntryModel).claim(
    { state: 'queued', nextAttemptAt: { $lte: new Date() } },
    {
      owner,
      leaseMs: cfg.get('mail:jobs:scan:lease_seconds') * 1000,
      limit,
      sort: [{ field: 'createdAt', dir: 'asc' }],
    },
  );
}

/**
 * Reads the mailboxes' settings for every entry of a group once (lib/ingest/round-reads.ts), each
 * with the sender of its prepared message; should that fail, each entry reads its own (and fails and
 * is retried as it would have).
 */
async function readGroup(deps: WorkerDeps, entries: Array<Row<IngestEntry>>, cache: PrepareCache): Promise<RoundReads | undefined> {
  const senders = await Promise.all(
    entries.map((e) =>
      cache.get(e.rawRef)!.then(
        (p) => senderOf(p.headers, e.envelopeFrom),
        () => '',
      ),
    ),
  );
  return readRound(
    deps,
    entries.map((e, i) => ({ mailboxUid: e.mailboxUid, sender: senders[i] })),
  ).catch((e: unknown) => {
    deps.log.warn({ err: (e as Error).message }, "scan round: reading the mailboxes' settings failed; each entry reads its own");
    return undefined;
  });
}

/** Releases an entry whose delivery failed: queued again after retry_backoff_seconds × attempts, or failed once max_attempts is reached. */
async function releaseFailed(
  deps: WorkerDeps,
  owner: string,
  entry: Row<IngestEntry>,
  e: unknown,
  round: ScanRound,
  state: RoundState,
): Promise<void> {
  const cfg = deps.config;
  const attempts = entry.attempts + 1;
  const failed = attempts >= cfg.get('mail:ingest:max_attempts');
  const message = (e as Error)?.message ?? String(e);
  deps.log.warn(
    { entry: entry.uid, attempts, err: message },
    failed ? 'ingest entry failed for good' : 'ingest entry failed; retrying later',
  );
  await deps.store
    .repo<IngestEntry>(IngestEntryModel)
    .release(
      entry.uid,
      owner,
      failed
        ? { attempts, state: 'failed', lastError: message.slice(0, 2000), finishedAt: new Date() }
        : {
            attempts,
            lastError: message.slice(0, 2000),
            nextAttemptAt: new Date(Date.now() + cfg.get('mail:ingest:retry_backoff_seconds') * 1000 * attempts),
          },
    )
    .catch(() => undefined);
  if (failed) {
    round.failed++;
    state.count('svcmail_deliveries_total', { outcome: 'failed' });
  } else round.retried++;
}

/**
 * Releases the delivered entries, writes their copies' full-text documents, records their
 * correspondents and raises the round's counts in one commit (one commit per round instead of two
 * per entry; the full-text index flushes once per round, not once per copy: on SQLite that flush is
 * most of a filing commit's cost). Until then a filed copy is listed but not yet found by search.
 * Shared rows are written in key order so that two workers' rounds never wait on each other in
 * opposite orders (PostgreSQL). A crash (or a failed commit) before it leaves the entries claimed:
 * when their lease ends they are delivered again, and filing, auto-replies and invitations
 * recognise what was done. The round's events go out after it either way.
 */
async function commitRound(
  deps: WorkerDeps,
  owner: string,
  done: Array<{ uid: string; patch: Patch<IngestEntry> }>,
  round: ScanRound,
  state: RoundState,
): Promise<void> {
  try {
    await deps.store.transaction(async (tx) => {
      const txRepo = tx.repo<IngestEntry>(IngestEntryModel);
      round.finished += (
        await txRepo.releaseMany(
          done.map((d) => ({ uid: d.uid, patch: d.patch })),
          owner,
        )
      ).length;
      await writeRoundTexts(tx, state.texts);
      await recordCorrespondents(
        { store: tx },
        inKeyOrder(state.correspondents).map((c) => ({ mailboxUid: c.mailboxUid, address: c.address, messages: c.n })),
      );
      // A crash before this commit loses the round's counts: metrics, not records.
      for (const c of inKeyOrder(state.counts)) await countEvent({ store: tx, log: deps.log }, c.name, c.labels, c.n);
    });
  } catch (e) {
    deps.log.error(
      { err: (e as Error).message, entries: done.length },
      'scan round: delivered entries not released; they are delivered again when their lease ends',
    );
  } finally {
    state.sendEvents();
  }
}

/**
 * Delivers a group of entries whose messages are prepared and commits them together: their
 * filing transactions arrive side by side, so SQLite's group commit writes them in a few commits
 * instead of one per copy, and the group's releases, texts and counts take one more.
 */
async function fileGroup(
  deps: WorkerDeps,
  owner: string,
  group: Array<Row<IngestEntry>>,
  cache: PrepareCache,
  round: ScanRound,
): Promise<void> {
  const state = roundState();
  const done: Array<{ uid: string; patch: Patch<IngestEntry> }> = [];
  const reads = await readGroup(deps, group, cache);
  await pool(group, group.length, async (entry: Row<IngestEntry>) => {
    try {
      done.push({ uid: entry.uid, patch: await deliverEntry(deps, entry, cache, state.writes, reads) });
    } catch (e) {
      await releaseFailed(deps, owner, entry, e, round, state);
    }
  });
  if (!done.length && !state.counts.size) {
    state.sendEvents();
    return;
  }
  for (const { patch } of done) {
    const verdict = verdictClass(patch.verdict);
    if (verdict) state.count('svcmail_scan_verdicts_total', { verdict });
    if (patch.state) state.count('svcmail_deliveries_total', { outcome: patch.state });
  }
  await commitRound(deps, owner, done, round, state);
}

/**
 * How long the first prepared entry of a group waits for others to finish their scans before the
 * group is filed: long enough that a round's fast scans, finishing within milliseconds of one
 * another, make one group (one commit); short beside a slow scan, which then holds nobody else.
 */
const GROUP_LINGER_MS = 25;

/**
 * The scan job (Spec: Inbound message; every 10 s and when woken). Claims queued entries with a
 * lease, so several workers are safe and a killed worker's entries come back when the lease ends;
 * a failure retries after retry_backoff_seconds × attempts, then the entry is failed.
 *
 * Every message of the round is parsed and scanned at once (the worker's scan limit decides how
 * many scans really run, lib/scan/limit.ts), and entries are filed as their scans finish, in
 * groups of what finished together: one slow scan (a scanner's time limit) holds its own entries
 * only, not the round's finished ones. Once half a batch is filed the round claims more, up to a
 * batch in flight, until a claim finds nothing: the scanners are kept busy while a round's slowest
 * scans finish (a round that ended only with its slowest scan held real scanning to a batch per
 * slowest scan).
 */
export async function runScanRound(deps: WorkerDeps, owner: string): Promise<ScanRound> {
  const batch = deps.config.get('mail:jobs:scan:batch_size');
  const round: ScanRound = { claimed: 0, finished: 0, retried: 0, failed: 0 };
  const cache: PrepareCache = new Map();
  const ready: Array<Row<IngestEntry>> = [];
  let wake = (): void => undefined;
  let left = 0;
  let more = true;
  /** Unfiled entries per raw message: its prepared form leaves the cache when the last is filed. */
  const unfiled = new Map<string, number>();
  // Claims up to a batch in flight and starts preparing what it got; an empty claim ends the topping up.
  const topUp = async () => {
    const entries = await claimDue(deps, owner, batch - left);
    if (!entries.length) more = false;
    round.claimed += entries.length;
    left += entries.length;
    for (const e of entries) unfiled.set(e.rawRef, (unfiled.get(e.rawRef) ?? 0) + 1);
    const byRaw = new Map<string, Array<Row<IngestEntry>>>();
    for (const e of entries) byRaw.set(e.rawRef, [...(byRaw.get(e.rawRef) ?? []), e]);
    const settled = () => undefined;
    for (const list of byRaw.values())
      void prepare(deps, list[0], cache)
        .then(settled, settled)
        .then(() => {
          ready.push(...list);
          wake();
        });
  };
  await topUp();
  while (left > 0) {
    // Kept full: once half the batch is filed, more is claimed beside the scans still running, so a
    // round's slowest scans never leave the scanners idle waiting for the round to end.
    if (more && left <= batch / 2) await topUp();
    if (!ready.length) await new Promise<void>((r) => (wake = r));
    if (ready.length < left) {
      // Linger a moment for the scans finishing beside this one (or until every remaining one is in).
      await new Promise<void>((r) => {
        const timer = setTimeout(r, GROUP_LINGER_MS);
        wake = () => {
          if (ready.length >= left) {
            clearTimeout(timer);
            r();
          }
        };
      });
    }
    wake = () => undefined;
    const group = ready.splice(0);
    left -= group.length;
    await fileGroup(deps, owner, group, cache, round);
    // A long round must not keep every prepared message: each goes once its last entry is filed.
    for (const e of group) {
      const n = (unfiled.get(e.rawRef) ?? 1) - 1;
      if (n > 0) unfiled.set(e.rawRef, n);
      else {
        unfiled.delete(e.rawRef);
        cache.delete(e.rawRef);
      }
    }
  }
  return round;
}

/** The round's full-text documents, for the copies that still exist (one deleted meanwhile gets none). */
export async function writeRoundTexts(tx: Store, texts: Map<string, string>): Promise<void> {
  if (!texts.size) return;
  const messages = tx.repo<Message>(MessageModel);
  const uids = [...texts.keys()].sort();
  const alive = new Set((await messages.list({ filter: { uid: { $in: uids } }, limit: uids.length })).map((m) => m.uid));
  await messages.setTexts(new Map(uids.filter((uid) => alive.has(uid)).map((uid) => [uid, texts.get(uid)!])));
}

/**
 * Runs rounds until the queue has nothing due (used on wake-up and by tests):
 * mail:jobs:scan:rounds_in_flight of them side by side, each claiming its own entries, so the
 * worker parses and scans one round while the database writes another (one round at a time left
 * each idle while the other worked). Side-by-side rounds are what several workers are anyway:
 * leases keep their entries apart and shared rows are written in key order.
 */
export async function drainQueue(deps: WorkerDeps, owner: string, maxRounds = 1000): Promise<ScanRound> {
  const total: ScanRound = { claimed: 0, finished: 0, retried: 0, failed: 0 };
  const wanted = deps.config.get('mail:jobs:scan:rounds_in_flight');
  let rounds = 0;
  let active = 0;
  let error: unknown = null;
  let settle!: () => void;
  const settled = new Promise<void>((r) => (settle = r));
  // A lane runs rounds until one finds nothing due; a lane that found work starts the missing ones
  // again (a lane that stopped on an empty queue is wanted back once mail comes in).
  const lane = async (): Promise<void> => {
    try {
      while (rounds < maxRounds && error === null) {
        rounds++;
        const r = await runScanRound(deps, owner);
        total.claimed += r.claimed;
        total.finished += r.finished;
        total.retried += r.retried;
        total.failed += r.failed;
        if (r.claimed === 0) break;
        while (active < wanted && rounds + active < maxRounds) start();
      }
    } catch (e) {
      error ??= e;
    } finally {
      if (--active === 0) settle();
    }
  };
  const start = () => {
    active++;
    void lane();
  };
  start();
  await settled;
  if (error !== null) throw error;
  return total;
}
