import express, { type Router } from 'express';
import { z } from 'zod';
import { defineRoute, type OpenApiRegistry } from '../http/index.js';
import { DistributionListModel } from './lists.js';
import { type Ctx, type Deps } from '../context/index.js';
import type { Filter, Repo, SortKey } from '../storage/index.js';
import { MailboxModel } from './mailboxes.js';

// The global address list: every mailbox and distribution list of the deployment, name and
// address only, for any signed-in user. Nothing else of a mailbox is shown here.

export interface DirectoryEntry {
  address: string;
  name: string;
  kind: 'mailbox' | 'list';
}

export const directoryQuery = z
  .object({
    q: z.string().trim().max(320).optional(),
    limit: z.coerce.number().int().min(1).max(1000).default(100),
    page: z.coerce.number().int().min(0).max(1_000_000).default(0),
  })
  .strict();

type Named = { address: string; name: string };
const byAddress: SortKey[] = [{ field: 'address', dir: 'asc' }];

/**
 * How many of the first `n` entries in address order are mailboxes (the rest are lists): the split
 * of two sorted sources, found by bisection with single-row probes and counts in the store, so it
 * follows the database's own order and a page never repeats or skips an entry.
 */
async function split(boxes: Repo<Named>, lists: Repo<Named>, filter: Filter, n: number, nBoxes: number, nLists: number): Promise<number> {
  let lo = Math.max(0, n - nLists);
  let hi = Math.min(n, nBoxes);
  while (lo < hi) {
    const a = (lo + hi) >> 1;
    const [box] = await boxes.list({ filter, sort: byAddress, limit: 1, offset: a });
    // Enough mailboxes when at least n - a lists sort before the a-th mailbox.
    if ((await lists.count({ ...filter, address: { $lt: box.address } })) >= n - a) hi = a;
    else lo = a + 1;
  }
  return lo;
}

/** Entries with a value (address, its domain, the name or a word of it) starting with q, case-insensitive; addresses in order; one page. */
export async function directory(
  ctx: Pick<Ctx, 'store'>,
  query: z.infer<typeof directoryQuery>,
): Promise<{ items: DirectoryEntry[]; total: number }> {
  const boxes = ctx.store.repo<Named>(MailboxModel);
  const lists = ctx.store.repo<Named>(DistributionListModel);
  // The "directory" value index of both models (lib/mail/directory-terms.ts) answers the prefix query.
  const q = query.q?.toLowerCase();
  const filter: Filter = q ? { directory: { $prefix: q } } : {};
  const [nBoxes, nLists] = await Promise.all([boxes.count(filter), lists.count(filter)]);
  const total = nBoxes + nLists;
  const from = Math.min(query.page * query.limit, total);
  const to = Math.min(from + query.limit, total);
  if (from === to) return { items: [], total };
  const a0 = await split(boxes, lists, filter, from, nBoxes, nLists);
  const a1 = await split(boxes, lists, filter, to, nBoxes, nLists);
  const [someBoxes, someLists] = await Promise.all([
    a1 > a0 ? boxes.list({ filter, sort: byAddress, offset: a0, limit: a1 - a0 }) : [],
    to - a1 > from - a0 ? lists.list({ filter, sort: byAddress, offset: from - a0, limit: to - a1 - (from - a0) }) : [],
  ]);
  const items: DirectoryEntry[] = [
    ...someBoxes.map((b) => ({ address: b.address, name: b.name, kind: 'mailbox' as const })),
    ...someLists.map((l) => ({ address: l.address, name: l.name, kind: 'list' as const })),
  ].sort((x, y) => (x.address < y.address ? -1 : x.address > y.address ? 1 : 0));
  return { items, total };
}

const directoryEntry = z.object({ address: z.string(), name: z.string(), kind: z.enum(['mailbox', 'list']) });

export function directoryRouter(deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/mail/directory',
    operationId: 'mail_directory',
    tags: ['mail/directory'],
    auth: 'signed-in',
    summary:
      'The global address list: mailboxes and distribution lists of the deployment (address, name, kind only); q matches, case-insensitively, the start of the address, its domain, the name or a word of the name; limit (≤ 1000) and page (zero-based); X-Total-Count',
    query: directoryQuery,
    response: z.array(directoryEntry).describe('entries, addresses in order'),
    handler: async (ctx, { query }, _req, res) => {
      const { items, total } = await directory(ctx, query);
      res.set('X-Total-Count', String(total));
      return items;
    },
  });
  return router;
}
