import { z } from 'zod';
import { requireTrusted } from '../auth/index.js';
import { writeAudit } from '../audit/index.js';
import { ApiError, invalid, notFound, type ErrorDetail, parseOrThrow } from '../errors/index.js';
import type { Filter } from '../storage/index.js';
import { checkClass, checkRecord, checkSensitive, checkTopLevelUid, isTopLevel, readableMailboxes } from './access.js';
import type { AnyRecord, Operation, ResourceDecl } from './define.js';
import type { Ctx } from '../context/index.js';
import { parseListQuery, type QueryParams } from './query.js';
import type { ResourceRegistry } from './registry.js';
import { schemasOf } from './schemas.js';
import { dropUnchangedReadOnly, refuseUnknownFields } from './read-only.js';

export const BULK_MAX = 1000;

export interface BulkResult {
  uid: string;
  status: number;
  version?: number;
  code?: string;
  message?: string;
}

const bulkUpdateItem = z.object({ uid: z.string().min(1), version: z.number().int().positive() }).passthrough();
const bulkDeleteItem = z.object({ uid: z.string().min(1), version: z.number().int().positive() }).strict();
const propertyBody = z.object({ value: z.unknown(), version: z.number().int().positive() }).strict();

/** A list filter narrowed to the values a caller may see (ResourceDecl.visibleTo): asked values outside drop out. */
function narrowTo(filter: Filter, allowed: Record<string, string[]>): Filter {
  const out: Filter = { ...filter };
  for (const [field, values] of Object.entries(allowed)) {
    const asked = filter[field];
    if (asked === undefined) out[field] = { $in: values };
    else if (asked !== null && typeof asked === 'object' && '$in' in asked)
      out[field] = { $in: asked.$in.filter((v) => values.includes(v as string)) };
    else if (typeof asked === 'string') out[field] = values.includes(asked) ? asked : { $in: [] };
    else out[field] = { $in: [] }; // list queries only ask values or lists of values
  }
  return out;
}

/** The generic operations of every resource. Knows nothing of HTTP. */
export class ResourceService {
  constructor(readonly registry: ResourceRegistry) {}

  view(decl: ResourceDecl, rec: AnyRecord): Record<string, unknown> {
    // Records come fresh from the store for each call: with nothing to hide, no copy is needed.
    if (!decl.hiddenFields?.length && !decl.model.lease && !decl.view) return rec;
    const out: Record<string, unknown> = { ...rec };
    for (const h of decl.hiddenFields ?? []) delete out[h];
    if (decl.model.lease) {
      delete out.claimedBy;
      delete out.leaseUntil;
    }
    return decl.view ? decl.view(out) : out;
  }

  #publish(ctx: Ctx, decl: ResourceDecl, action: 'create' | 'update' | 'delete', rec: AnyRecord): void {
    const channels = decl.eventChannels ? decl.eventChannels(rec) : [rec.uid, ...(decl.parent ? [String(rec[decl.parent.field])] : [])];
    ctx.events.publish(channels, { type: decl.entity, action, data: this.view(decl, rec) });
  }

  async #audit(
    ctx: Ctx,
    decl: ResourceDecl,
    action: string,
    uid: string | null,
    before: AnyRecord | null,
    after: AnyRecord | null,
  ): Promise<void> {
    if (!decl.audit) return;
    let b = before ? this.view(decl, before) : null;
    let a = after ? this.view(decl, after) : null;
    let details: Record<string, unknown> | null = null;
    if (decl.scope === 'mailbox') {
      // Administrators read the audit log; they never see an owner's own settings. Values are kept
      // for the administrative fields only, and the names of the other fields that changed.
      const shown = new Set(['uid', 'version', 'address', ...(decl.adminFields ?? [])]);
      const keys = new Set([...Object.keys(b ?? {}), ...Object.keys(a ?? {})]);
      details = {
        changed: [...keys].filter((k) => !['version', 'updatedAt'].includes(k) && JSON.stringify(b?.[k]) !== JSON.stringify(a?.[k])),
      };
      const narrow = (v: Record<string, unknown> | null) =>
        v ? Object.fromEntries(Object.entries(v).filter(([k]) => shown.has(k))) : null;
      b = narrow(b);
      a = narrow(a);
    }
    await writeAudit(ctx.store, ctx, {
      action: `${decl.name}.${action}`,
      resource: decl.name,
      resourceUid: uid,
      before: b,
      after: a,
      details,
    });
  }

  /** Narrows a list filter to what the caller may see; an invisible mailbox or parent answers 404. */
  async #scopeFilter(ctx: Ctx, decl: ResourceDecl, filter: Filter): Promise<Filter> {
    if (decl.scope === 'global') {
      checkClass(ctx, decl.defaultAcl, 'read');
      return decl.visibleTo ? narrowTo(filter, await decl.visibleTo(ctx)) : filter;
    }
    const parentUid = decl.parent ? filter[decl.parent.field] : undefined;
    if (decl.parent && typeof parentUid === 'string') {
      const parentDecl = this.registry.get(decl.parent.resource);
      if (isTopLevel(parentDecl)) {
        // A top-level parent inherits nothing: its own entries decide, no need to load it.
        await checkTopLevelUid(ctx, parentDecl, parentUid, 'read');
        return filter;
      }
      const parent = await ctx.store.repo<Record<string, unknown>>(parentDecl.model).get(parentUid);
      if (!parent) throw notFound();
      await checkRecord(ctx, parentDecl, parent, 'read');
      return filter;
    }
    const field = decl.mailboxField!;
    const readable = await readableMailboxes(ctx);
    const asked = filter[field];
    if (typeof asked === 'string') {
      if (!readable.includes(asked)) throw notFound();
      return filter;
    }
    if (asked !== undefined) {
      const list = (asked as { $in: string[] }).$in;
      if (list.some((m) => !readable.includes(m))) throw notFound();
      return filter;
    }
    return { ...filter, [field]: { $in: readable } };
  }

  async list(ctx: Ctx, decl: ResourceDecl, params: QueryParams): Promise<Record<string, unknown>[]> {
    checkSensitive(ctx, decl, 'list');
    const adminScope = this.#adminScope(ctx, decl, params);
    const q = parseListQuery(decl, params);
    if (adminScope) {
      const rows = await ctx.store.repo<Record<string, unknown>>(decl.model).list(q);
      await writeAudit(ctx.store, ctx, {
        action: `${decl.name}.list.admin`,
        resource: decl.name,
        details: { count: rows.length, filter: q.filter as Record<string, unknown> },
      });
      return Promise.all(rows.map((r) => decl.adminView!(ctx, r)));
    }
    const filter = await this.#scopeFilter(ctx, decl, q.filter);
    const rows = await ctx.store.repo<Record<string, unknown>>(decl.model).list({ ...q, filter });
    return rows.map((r) => this.view(decl, r));
  }

  async count(ctx: Ctx, decl: ResourceDecl, params: QueryParams): Promise<number> {
    checkSensitive(ctx, decl, 'head');
    const adminScope = this.#adminScope(ctx, decl, params);
    const q = parseListQuery(decl, params);
    if (adminScope) {
      // The same records as the ?scope=admin list, so the same audit.
      const n = await ctx.store.repo<Record<string, unknown>>(decl.model).count(q.filter);
      await writeAudit(ctx.store, ctx, {
        action: `${decl.name}.count.admin`,
        resource: decl.name,
        details: { count: n, filter: q.filter as Record<string, unknown> },
      });
      return n;
    }
    const filter = await this.#scopeFilter(ctx, decl, q.filter);
    return ctx.store.repo<Record<string, unknown>>(decl.model).count(filter);
  }

  /** ?scope=admin: only where declared; a trusted role with fresh elevation; always audited. */
  #adminScope(ctx: Ctx, decl: ResourceDecl, params: QueryParams): boolean {
    const scope = params.scope;
    if (scope === undefined) return false;
    if (scope !== 'admin' || !decl.adminView)
      throw invalid(`scope=${String(scope)} is not supported here`, [
        { path: 'scope', message: 'only scope=admin, on resources that offer it' },
      ]);
    requireTrusted(ctx.principal, ctx.config, { fresh: true });
    return true;
  }

  async load(ctx: Ctx, decl: ResourceDecl, uid: string, right: 'read' | 'write' | 'delete' | 'share' = 'read'): Promise<AnyRecord> {
    const rec = await ctx.store.repo<Record<string, unknown>>(decl.model).get(uid);
    if (!rec) throw notFound();
    await checkRecord(ctx, decl, rec, right);
    if (decl.visibleTo) {
      const allowed = await decl.visibleTo(ctx);
      if (Object.entries(allowed).some(([f, values]) => !values.includes(rec[f] as string))) throw notFound();
    }
    return rec;
  }

  async get(ctx: Ctx, decl: ResourceDecl, uid: string, params: QueryParams = {}): Promise<Record<string, unknown>> {
    checkSensitive(ctx, decl, 'get');
    if (this.#adminScope(ctx, decl, params)) {
      const rec = await ctx.store.repo<Record<string, unknown>>(decl.model).get(uid);
      if (!rec) throw notFound();
      await writeAudit(ctx.store, ctx, { action: `${decl.name}.read.admin`, resource: decl.name, resourceUid: uid });
      return decl.adminView!(ctx, rec);
    }
    return this.view(decl, await this.load(ctx, decl, uid));
  }

  async create(ctx: Ctx, decl: ResourceDecl, body: unknown): Promise<Record<string, unknown>> {
    checkSensitive(ctx, decl, 'create');
    // Who may create is known before the body is read: refuse before telling what a valid body is.
    if (!decl.parent) checkClass(ctx, decl.createAcl ?? [], 'create');
    const input = parseOrThrow(schemasOf(decl).create, body, `invalid ${decl.entity}`) as Record<string, unknown>;
    if (decl.parent) {
      const parentDecl = this.registry.get(decl.parent.resource);
      const parentUid = input[decl.parent.field];
      if (typeof parentUid !== 'string')
        throw invalid(`${decl.parent.field} is required`, [{ path: decl.parent.field, message: 'required' }]);
      const parent = await ctx.store.repo<Record<string, unknown>>(parentDecl.model).get(parentUid);
      if (!parent) throw notFound(); // exactly like an invisible parent: no hint that it exists
      await checkRecord(ctx, parentDecl, parent, 'create');
      if (decl.mailboxField && decl.mailboxField !== decl.parent.field && parentDecl.mailboxField) {
        input[decl.mailboxField] = parent[parentDecl.mailboxField];
      }
    }
    const columns = decl.model.fields;
    const rec = await ctx.store.transaction(async (tx) => {
      const txCtx = { ...ctx, store: tx };
      let data = Object.fromEntries(Object.entries(input).filter(([k]) => k in columns));
      if (decl.hooks?.beforeCreate) data = await decl.hooks.beforeCreate(txCtx, data, input);
      const created = await tx.repo<Record<string, unknown>>(decl.model).create(data);
      await decl.hooks?.afterCreate?.(txCtx, created, input);
      await this.#audit(txCtx, decl, 'create', created.uid, null, created);
      return created;
    });
    this.#publish(ctx, decl, 'create', rec);
    await decl.hooks?.afterCommit?.(ctx, 'create', null, rec);
    return this.view(decl, rec);
  }

  async update(ctx: Ctx, decl: ResourceDecl, uid: string, body: unknown, params: QueryParams = {}): Promise<Record<string, unknown>> {
    checkSensitive(ctx, decl, 'update');
    refuseUnknownFields(decl, body);
    if (params.scope !== undefined) {
      if (params.scope !== 'admin' || !decl.adminFields?.length)
        throw invalid(`scope=${String(params.scope)} is not supported here`, [
          { path: 'scope', message: 'only scope=admin, on resources with administrative fields' },
        ]);
      requireTrusted(ctx.principal, ctx.config, { fresh: true });
      const { version, ...patch } = parseOrThrow(
        schemasOf(decl).adminUpdate,
        body,
        `invalid administrative ${decl.entity} update`,
      ) as Record<string, unknown> & { version: number };
      const before = await ctx.store.repo<Record<string, unknown>>(decl.model).get(uid);
      if (!before) throw notFound();
      const after = await this.#applyUpdate(ctx, { ...decl, audit: true }, before, version, patch, 'update.admin');
      // The administrator sees the administrative details only, never the owner's other settings.
      return decl.adminView ? decl.adminView(ctx, after as AnyRecord) : after;
    }
    const before = await this.load(ctx, decl, uid, 'write');
    const { version, ...patch } = parseOrThrow(
      schemasOf(decl).update,
      dropUnchangedReadOnly(decl, this.view(decl, { ...before }), body),
      `invalid ${decl.entity} update`,
    ) as Record<string, unknown> & { version: number };
    return this.#applyUpdate(ctx, decl, before, version, patch);
  }

  async updateProperty(ctx: Ctx, decl: ResourceDecl, uid: string, property: string, body: unknown): Promise<Record<string, unknown>> {
    checkSensitive(ctx, decl, 'updateProperty');
    const schemas = schemasOf(decl);
    if (!schemas.writable.has(property)) throw notFound(`No writable property ${property}`);
    const { value, version } = parseOrThrow(propertyBody, body, 'invalid property update');
    const { version: _v, ...patch } = parseOrThrow(schemas.update, { [property]: value, version }, `invalid ${property}`) as Record<
      string,
      unknown
    >;
    return this.#applyUpdate(ctx, decl, await this.load(ctx, decl, uid, 'write'), version, patch);
  }

  async #applyUpdate(
    ctx: Ctx,
    decl: ResourceDecl,
    before: AnyRecord,
    version: number,
    patch: Record<string, unknown>,
    action = 'update',
  ): Promise<Record<string, unknown>> {
    const after = await ctx.store.transaction(async (tx) => {
      const txCtx = { ...ctx, store: tx };
      const p = decl.hooks?.beforeUpdate ? await decl.hooks.beforeUpdate(txCtx, before, patch) : patch;
      const updated = await tx.repo<Record<string, unknown>>(decl.model).update(before.uid, p, { expectedVersion: version });
      await decl.hooks?.afterUpdate?.(txCtx, before, updated);
      await this.#audit(txCtx, decl, action, before.uid, before, updated);
      return updated;
    });
    this.#publish(ctx, decl, 'update', after);
    await decl.hooks?.afterCommit?.(ctx, 'update', before, after);
    return this.view(decl, after);
  }

  async remove(ctx: Ctx, decl: ResourceDecl, uid: string, version: unknown): Promise<void> {
    checkSensitive(ctx, decl, 'delete');
    if (typeof version !== 'number' || !Number.isInteger(version) || version < 1) {
      throw invalid('version is required to delete (in the body or ?version=)', [{ path: 'version', message: 'required' }]);
    }
    const rec = await this.load(ctx, decl, uid, 'delete');
    await ctx.store.transaction(async (tx) => {
      const txCtx = { ...ctx, store: tx };
      await decl.hooks?.beforeDelete?.(txCtx, rec);
      const gone = await tx.repo<Record<string, unknown>>(decl.model).delete(uid, { expectedVersion: version });
      if (!gone) throw notFound();
      await decl.hooks?.afterDelete?.(txCtx, rec);
      await this.#audit(txCtx, decl, 'delete', uid, rec, null);
    });
    this.#publish(ctx, decl, 'delete', rec);
    await decl.hooks?.afterCommit?.(ctx, 'delete', rec, null);
  }

  async #bulk<I extends { uid: string }>(
    items: unknown,
    itemSchema: z.ZodType<I>,
    op: Operation,
    fn: (item: I) => Promise<number | undefined>,
  ): Promise<BulkResult[]> {
    const list = parseOrThrow(z.array(z.unknown()).min(1).max(BULK_MAX), items, `${op} takes an array of 1 to ${BULK_MAX} items`);
    const results: BulkResult[] = [];
    for (const raw of list) {
      const parsed = itemSchema.safeParse(raw);
      const uid = typeof (raw as { uid?: unknown })?.uid === 'string' ? (raw as { uid: string }).uid : '';
      if (!parsed.success) {
        const details: ErrorDetail[] = parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
        results.push({ uid, status: 400, code: 'api-106', message: details.map((d) => `${d.path}: ${d.message}`).join('; ') });
        continue;
      }
      try {
        const version = await fn(parsed.data);
        results.push({ uid, status: 200, ...(version ? { version } : {}) });
      } catch (e) {
        if (!(e instanceof ApiError)) throw e;
        results.push({ uid, status: e.status, code: e.code, message: e.message });
      }
    }
    return results;
  }

  bulkUpdate(ctx: Ctx, decl: ResourceDecl, body: unknown): Promise<BulkResult[]> {
    checkSensitive(ctx, decl, 'bulkUpdate');
    return this.#bulk(
      body,
      bulkUpdateItem,
      'bulkUpdate',
      async ({ uid, ...rest }) => (await this.update(ctx, decl, uid, rest)).version as number,
    );
  }

  bulkDelete(ctx: Ctx, decl: ResourceDecl, body: unknown): Promise<BulkResult[]> {
    checkSensitive(ctx, decl, 'bulkDelete');
    return this.#bulk(body, bulkDeleteItem, 'bulkDelete', async ({ uid, version }) => {
      await this.remove(ctx, decl, uid, version);
      return undefined;
    });
  }
}
