// Properties of recipient resolution (lib/ingest/resolve.ts, Spec: Recipient resolution order) on a
// real SQLite store: plus-addressing and aliases reach the right mailbox whatever the case and the
// domain alias, and distribution-list expansion terminates on any graph of lists (cycles included)
// and reaches exactly the mailboxes within mail:distribution_lists:max_depth levels.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { productModels, productRegistry } from '../../../lib/catalog.js';
import { loadConfig } from '../../../lib/config/index.js';
import {
  DistributionListModel,
  expandRecipient,
  knownAddresses,
  resolveRecipient,
  type DistributionList,
} from '../../../lib/ingest/index.js';
import { AddressModel } from '../../../lib/mail/index.js';
import { openSqlStore } from '../../../lib/storage/sql/open.js';
import type { Store } from '../../../lib/storage/index.js';
import { freshSqlite, type TestDatabase } from '../../helpers/databases.js';

const RUNS = { numRuns: Number(process.env.RUNS ?? 60) };
let db: TestDatabase;
let store: Store;
let run = 0;
const config = (values: Record<string, unknown> = {}) =>
  loadConfig({ env: { NODE_ENV: 'test' }, values: { 'log:level': 'silent', ...values } as never });

beforeAll(async () => {
  db = freshSqlite();
  store = await openSqlStore({ url: db.url, models: productModels(productRegistry()), synchronize: true });
}, 60_000);
afterAll(async () => {
  await store?.close();
  await db?.drop();
});

/** A fresh served domain (and a domain alias of it) per run, so runs never see each other's records. */
function namespace(): { domain: string; alias: string; domains: Map<string, string> } {
  run += 1;
  const domain = `d${run}.test`;
  const alias = `a${run}.test`;
  return {
    domain,
    alias,
    domains: new Map([
      [domain, domain],
      [alias, domain],
    ]),
  };
}
const addMailbox = async (addresses: string[]) => {
  const mailboxUid = `mbx-${run}-${addresses[0]}`;
  for (const [i, address] of addresses.entries())
    await store
      .repo<{ address: string; mailboxUid: string; kind: 'primary' | 'alias' }>(AddressModel)
      .create({ address, mailboxUid, kind: i ? 'alias' : 'primary' });
  return mailboxUid;
};
const local = fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,15}$/);
const tag = fc.stringMatching(/^[a-z0-9+._-]{0,10}$/);
const mixCase = (s: string, mask: boolean[]) => [...s].map((c, i) => (mask[i % Math.max(1, mask.length)] ? c.toUpperCase() : c)).join('');

describe('recipient resolution (fast-check, SQLite)', () => {
  it('plus-addressing reaches the base mailbox with the tag, in any case and through a domain alias; off, it reaches nothing', async () => {
    await fc.assert(
      fc.asyncProperty(local, tag, fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }), async (base, t, mask) => {
        const ns = namespace();
        const mailboxUid = await addMailbox([`${base}@${ns.domain}`]);
        for (const domain of [ns.domain, ns.alias]) {
          const r = await resolveRecipient({ store, config: config() }, mixCase(`${base}+${t}@${domain}`, mask), ns.domains);
          expect(r).toEqual({ kind: 'mailbox', mailboxUid, address: `${base}@${ns.domain}`, tag: t || null });
          const off = await resolveRecipient(
            { store, config: config({ 'mail:plus_addressing:enabled': false }) },
            `${base}+${t}@${domain}`,
            ns.domains,
          );
          expect(off).toEqual({ kind: 'unknown', reason: 'recipient' });
        }
      }),
      RUNS,
    );
  });

  it('an address that exists as written wins over its plus reading; aliases reach their mailbox untagged', async () => {
    await fc.assert(
      fc.asyncProperty(local, local, tag, async (base, aliasLocal, t) => {
        const ns = namespace();
        const owner = await addMailbox([`${base}@${ns.domain}`, `${aliasLocal}x@${ns.domain}`]);
        const plusBox = await addMailbox([`${base}+${t}z@${ns.domain}`]);
        const deps = { store, config: config() };
        expect(await resolveRecipient(deps, `${base}+${t}z@${ns.domain}`, ns.domains)).toMatchObject({
          kind: 'mailbox',
          mailboxUid: plusBox,
          tag: null,
        });
        expect(await resolveRecipient(deps, `${aliasLocal.toUpperCase()}X@${ns.alias}`, ns.domains)).toMatchObject({
          kind: 'mailbox',
          mailboxUid: owner,
          tag: null,
        });
        expect(await resolveRecipient(deps, `${base}@unserved-${run}.example`, ns.domains)).toEqual({ kind: 'unknown', reason: 'domain' });
        expect(await resolveRecipient(deps, `nobody-${base}@${ns.domain}`, ns.domains)).toEqual({ kind: 'unknown', reason: 'recipient' });
      }),
      RUNS,
    );
  });

  it('recipients looked up together (knownAddresses: one read for a hand-off) resolve exactly as each does alone', async () => {
    await fc.assert(
      fc.asyncProperty(local, local, tag, fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }), async (base, aliasLocal, t, mask) => {
        const ns = namespace();
        await addMailbox([`${base}@${ns.domain}`, `${aliasLocal}x@${ns.domain}`]);
        await addMailbox([`${base}+${t}z@${ns.domain}`]);
        const deps = { store, config: config() };
        const rcpts = [
          `${base}@${ns.alias}`,
          mixCase(`${aliasLocal}x@${ns.alias}`, mask),
          `${base}+${t}z@${ns.domain}`,
          mixCase(`${base}+${t}@${ns.alias}`, mask),
          `nobody-${base}@${ns.domain}`,
          `${base}@unserved-${run}.example`,
          'not-an-address',
        ];
        const known = await knownAddresses(deps, rcpts, ns.domains);
        expect(known.size).toBe(3);
        for (const r of rcpts)
          expect(await resolveRecipient(deps, r, ns.domains, known)).toEqual(await resolveRecipient(deps, r, ns.domains));
      }),
      RUNS,
    );
  });

  // A graph of lists: list i names mailbox i, up to four lists (itself included: cycles) and maybe an
  // external address. Depth limits then cut through every shape of path (tuned so that about one
  // graph in twenty has a list reachable by paths of different lengths across the limit).
  const graph = fc
    .record({ lists: fc.integer({ min: 1, max: 12 }), maxDepth: fc.integer({ min: 1, max: 5 }) })
    .chain(({ lists, maxDepth }) =>
      fc.record({
        maxDepth: fc.constant(maxDepth),
        boxes: fc.constant(lists),
        members: fc
          .array(fc.tuple(fc.array(fc.nat(lists - 1), { maxLength: 4 }), fc.option(fc.nat(2), { nil: undefined })), {
            minLength: lists,
            maxLength: lists,
          })
          .map((ms) =>
            ms.map(
              ([ls, ext], i) =>
                [...ls.map((l) => ({ list: l })), { box: i }, ...(ext === undefined ? [] : [{ external: ext }])] as Array<{
                  list?: number;
                  box?: number;
                  external?: number;
                }>,
            ),
          ),
      }),
    );

  it('list expansion terminates on any graph (cycles too) and reaches exactly the mailboxes within max_depth', async () => {
    await fc.assert(
      fc.asyncProperty(graph, async (g) => {
        const ns = namespace();
        const boxUids = [];
        for (let i = 0; i < g.boxes; i++) boxUids.push(await addMailbox([`box${i}@${ns.domain}`]));
        const listAddr = (i: number) => `list${i}@${ns.domain}`;
        const memberAddr = (m: { list?: number; box?: number; external?: number }) =>
          m.list !== undefined
            ? listAddr(m.list)
            : m.box !== undefined
              ? `box${m.box}@${ns.domain}`
              : `ext${m.external}@elsewhere-${run}.example`;
        for (const [i, members] of g.members.entries()) {
          await store.repo<DistributionList>(DistributionListModel).create({
            address: listAddr(i),
            name: '',
            members: [...new Set(members.map(memberAddr))],
            membersOnly: false,
            allowExternalMembers: true,
          });
        }
        // Reference: the level at which each list is first reached; a list at a level <= max_depth is expanded.
        const level = new Map<number, number>([[0, 1]]);
        const queue = [0];
        const boxes = new Set<string>();
        const external = new Set<string>();
        while (queue.length) {
          const i = queue.shift()!;
          const d = level.get(i)!;
          if (d > g.maxDepth) continue;
          for (const m of g.members[i]) {
            if (m.box !== undefined) boxes.add(boxUids[m.box]);
            else if (m.external !== undefined) external.add(memberAddr(m));
            else if (!level.has(m.list!)) {
              level.set(m.list!, d + 1);
              queue.push(m.list!);
            }
          }
        }
        const deps = { store, config: config({ 'mail:distribution_lists:max_depth': g.maxDepth }) };
        const first = await resolveRecipient(deps, listAddr(0), ns.domains);
        expect(first.kind).toBe('list');
        const out = await Promise.race([
          expandRecipient(deps, listAddr(0), first, { sender: 'x@example.net', senderVerified: false, domains: ns.domains }),
          new Promise<never>((_r, reject) => setTimeout(() => reject(new Error('expansion did not terminate within 5 s')), 5000)),
        ]);
        expect(new Set(out.mailboxes.keys()), JSON.stringify(g)).toEqual(boxes);
        expect(new Set(out.external.map((e) => e.address)), JSON.stringify(g)).toEqual(external);
        expect(out.external.length).toBe(external.size); // each external member relayed once
        for (const [, how] of out.mailboxes) expect(how.viaList).toBe(listAddr(0));
      }),
      {
        ...RUNS,
        // A list reached first down a long branch, then again through a short one: it must be expanded
        // from the short one too (members within max_depth of the first list were once dropped).
        examples: [[{ maxDepth: 3, boxes: 1, members: [[{ list: 1 }, { list: 2 }], [{ list: 2 }], [{ list: 3 }], [{ box: 0 }]] }]],
      },
    );
  }, 60_000);
});
