import express, { type Router } from 'express';
import { z } from 'zod';
import { requireTrusted } from '../auth/index.js';
import { writeAudit } from '../audit/index.js';
import { ApiError, isApiError, parseOrThrow } from '../errors/index.js';
import { isoDate, defineRoute, type AuthRequirement, type OpenApiRegistry } from '../http/index.js';
import { type Ctx, type Deps } from '../context/index.js';
import { defineModel, type ModelDef } from '../storage/index.js';

// One record per deployment (Spec: Encryption policy — "one record for the deployment"; the other
// policies under /api/system follow it): read by whoever `read` names, changed only by a trusted
// role with fresh elevation, every change audited with before and after.

/** Who may read: anyone (pages before sign-in), any signed-in user, or a trusted role (elevated token). */
export type SingletonRead = 'none' | 'signed-in' | 'trusted';

const KEY = 'deployment';

export interface SingletonDecl<S extends z.ZodRawShape> {
  /** Path segment under /api/system and the audit resource name (encryption-policy). */
  name: string;
  /** Model and table name. */
  table: string;
  /** The value fields; each has a default, which is the value until the first write. */
  fields: S;
  read: SingletonRead;
  summary: string;
  description?: string;
  /** Checks of the whole value after a change (limits from settings, cross-field rules); throw api-106. */
  check?(value: z.infer<z.ZodObject<S>>, ctx: Ctx): void | Promise<void>;
  /** What the audit log keeps of a value (default: all of it); large fields can be kept as a digest. */
  auditView?(value: SingletonView<S>): Record<string, unknown>;
}

export type SingletonView<S extends z.ZodRawShape> = z.infer<z.ZodObject<S>> & { version: number; updatedAt: Date | null };

export interface Singleton<S extends z.ZodRawShape = z.ZodRawShape> {
  readonly decl: SingletonDecl<S>;
  readonly model: ModelDef;
  /** The request body of a change: any subset of the fields, and the version read (stale: 409 api-108). */
  readonly updateSchema: z.ZodObject;
  read(deps: Pick<Deps, 'store'>): Promise<SingletonView<S>>;
  /** Trusted role, fresh elevation, audited: `input` is checked against updateSchema first. */
  write(ctx: Ctx, input: unknown): Promise<SingletonView<S>>;
  /** The same with a change already parsed by updateSchema (a route's body). */
  apply(ctx: Ctx, change: Record<string, unknown>): Promise<SingletonView<S>>;
}

/** zod 4 applies defaults to omitted optional fields: a patch must never reset what the client left out. */
function noDefault(s: z.ZodType): z.ZodType {
  let cur = s;
  while (cur.def.type === 'default' || cur.def.type === 'prefault') cur = (cur.def as unknown as { innerType: z.ZodType }).innerType;
  return cur;
}

export function defineSingleton<S extends z.ZodRawShape>(decl: SingletonDecl<S>): Singleton<S> {
  const full = z.object(decl.fields);
  const defaults = full.parse({}) as Record<string, unknown>;
  const names = Object.keys(decl.fields);
  const model = defineModel({
    name: decl.table,
    table: decl.table,
    fields: { key: z.literal(KEY), ...decl.fields },
    indexes: [{ fields: ['key'], unique: true }],
  });
  const updateSchema = z
    .object({
      ...Object.fromEntries(names.map((k) => [k, noDefault(decl.fields[k] as z.ZodType).optional()])),
      /** The version read; omitted, the change applies to whatever is stored. */
      version: z.number().int().min(0).optional(),
    })
    .strict();
  type Rec = Record<string, unknown> & { uid: string; version: number; updatedAt: Date };
  const view = (rec: Rec | null): SingletonView<S> => ({
    ...(Object.fromEntries(names.map((k) => [k, rec ? (rec[k] ?? defaults[k]) : defaults[k]])) as z.infer<z.ZodObject<S>>),
    version: rec?.version ?? 0,
    updatedAt: rec?.updatedAt ?? null,
  });
  const read = async (deps: Pick<Deps, 'store'>) => view(await deps.store.repo<Rec>(model).findOne({ key: KEY }));

  async function write(ctx: Ctx, input: unknown): Promise<SingletonView<S>> {
    requireTrusted(ctx.principal, ctx.config, { fresh: true });
    return apply(ctx, parseOrThrow(updateSchema, input, `invalid ${decl.name}`));
  }

  async function apply(ctx: Ctx, change: Record<string, unknown>): Promise<SingletonView<S>> {
    requireTrusted(ctx.principal, ctx.config, { fresh: true });
    const { version, ...patch } = change as Record<string, unknown> & { version?: number };
    for (const k of Object.keys(patch)) if (patch[k] === undefined) delete patch[k];
    try {
      return await ctx.store.transaction(async (tx) => {
        const repo = tx.repo<Rec>(model);
        const cur = await repo.findOne({ key: KEY });
        const before = view(cur);
        if (version !== undefined && version !== before.version)
          throw new ApiError('api-108', `${decl.name} changed meanwhile (version ${before.version}); read it again`);
        const merged = parseOrThrow(
          full,
          { ...Object.fromEntries(names.map((k) => [k, before[k as keyof typeof before]])), ...patch },
          `invalid ${decl.name}`,
        );
        await decl.check?.(merged, { ...ctx, store: tx });
        const saved = cur
          ? await repo.update(cur.uid, patch, { expectedVersion: cur.version })
          : await repo.create({ key: KEY, ...merged } as never);
        const after = view(saved);
        const kept = decl.auditView ?? ((v: SingletonView<S>) => ({ ...v }));
        await writeAudit(tx, ctx, {
          action: `${decl.name}.update`,
          resource: decl.name,
          resourceUid: saved.uid,
          before: kept(before),
          after: kept(after),
        });
        return after;
      });
    } catch (e) {
      // Two first writes at once: the unique key lets one win; the other is told to read again.
      if (isApiError(e) && e.code === 'api-112') throw new ApiError('api-108', `${decl.name} changed meanwhile; read it again`);
      throw e;
    }
  }
  return { decl, model, updateSchema, read, write, apply };
}

const AUTH_OF: Record<SingletonRead, AuthRequirement> = { none: 'none', 'signed-in': 'signed-in', trusted: 'trusted' };

/** GET and PUT /api/system/<name> for each singleton. */
export function singletonRouter(list: readonly Singleton[], deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  for (const s of list) {
    const path = `/api/system/${s.decl.name}`;
    const id = s.decl.name.replace(/-/g, '_');
    const record = z
      .object({ ...s.decl.fields, version: z.number().int().min(0), updatedAt: isoDate.nullable() })
      .describe('The record, with version (0 before the first change) and updatedAt');

    defineRoute(router, deps, openapi, {
      method: 'get',
      path,
      operationId: `${id}_read`,
      summary: s.decl.summary,
      description: s.decl.description,
      tags: ['system'],
      auth: AUTH_OF[s.decl.read],
      response: record,
      handler: (ctx) => s.read(ctx),
    });

    defineRoute(router, deps, openapi, {
      method: 'put',
      path,
      operationId: `${id}_write`,
      summary: `Change the ${s.decl.name} (audited with before and after)`,
      description: 'Any subset of the fields; version is the one read (stale: 409 api-108; omitted: applies to what is stored).',
      tags: ['system'],
      auth: 'trusted-fresh',
      body: s.updateSchema,
      response: record,
      errors: { 400: 'api-106: invalid field values', 409: 'api-108: stale version' },
      handler: (ctx, { body }) => s.apply(ctx, body),
    });
  }
  return router;
}
