import type { Ctx } from '../context/index.js';
import type { ResourceService } from '../resources/index.js';
import type { RecordsApi, Row, SyncResource } from './types.js';

/** Records listed per page while reading a whole collection's change keys. */
const PAGE = 1000;

/**
 * Personal-information records (contacts, calendar events, tasks, task lists) for one caller,
 * through the resource engine: the same validation, hooks, access checks (trusted roles stripped),
 * audit and events as the HTTP API's generic routes.
 */
export function recordsApi(ctx: Ctx, service: ResourceService, name: SyncResource): RecordsApi {
  const decl = () => service.registry.get(name);
  return {
    list: (filter) => listAll(ctx, service, name, filter),
    async keys(filter) {
      const out = new Map<string, string>();
      for (const r of await listAll(ctx, service, name, filter)) out.set(String(r.uid), String(r.version));
      return out;
    },
    get: (uid) => service.get(ctx, decl(), uid),
    create: (body) => service.create(ctx, decl(), body),
    async update(uid, body, expectedVersion) {
      const version = expectedVersion ?? (await service.get(ctx, decl(), uid)).version;
      return service.update(ctx, decl(), uid, { ...body, version });
    },
    async remove(uid) {
      const cur = await service.get(ctx, decl(), uid);
      await service.remove(ctx, decl(), uid, cur.version);
    },
  };
}

async function listAll(ctx: Ctx, service: ResourceService, name: SyncResource, filter: Record<string, string>): Promise<Row[]> {
  const out: Row[] = [];
  for (let page = 0; ; page++) {
    const rows = await service.list(ctx, service.registry.get(name), { ...filter, limit: String(PAGE), page: String(page) });
    out.push(...rows);
    if (rows.length < PAGE) return out;
  }
}
