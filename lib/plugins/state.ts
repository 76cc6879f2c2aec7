import { z } from 'zod';
import { writeAudit } from '../audit/index.js';
import { ApiError } from '../errors/index.js';
import type { EventBus } from '../events/index.js';
import type { Ctx } from '../context/index.js';
import { defineModel, type Row, type Store } from '../storage/index.js';
import { DEVICE_MODELS } from './device-models.js';

// Enabled or disabled, per plugin, in the store: the api daemon changes it and every protocols
// daemon copy reads it, so they agree. No record means enabled (a plugin that ships is on).

export const pluginStateFields = {
  name: z.string().min(1),
  enabled: z.boolean(),
  changedBy: z.string().nullable().default(null),
};

export const PluginStateModel = defineModel({
  name: 'plugin_state',
  table: 'plugin_states',
  fields: pluginStateFields,
  indexes: [{ fields: ['name'], unique: true }],
});
export type PluginState = z.infer<z.ZodObject<typeof pluginStateFields>>;

/** The host's records: plugin states and the mobile-sync plugin's stored state (device-models.ts). */
export const PLUGIN_MODELS = [PluginStateModel, ...DEVICE_MODELS];

/** The channel a change goes out on, so other daemons drop their cached state at once. */
export const PLUGIN_STATE_CHANNEL = 'svcmail:plugins';

/** A read costs one indexed query; the cache bounds how stale a copy can be when an event is lost. */
const CACHE_MS = 1000;

export class PluginStates {
  readonly #cache = new Map<string, { enabled: boolean; until: number }>();
  readonly #unsubscribe: () => void;

  constructor(
    private readonly store: Store,
    private readonly events: EventBus,
  ) {
    this.#unsubscribe = events.subscribe(PLUGIN_STATE_CHANNEL, () => this.#cache.clear());
  }

  async enabled(name: string): Promise<boolean> {
    const hit = this.#cache.get(name);
    if (hit && hit.until > Date.now()) return hit.enabled;
    const row = await this.store.repo<PluginState>(PluginStateModel).findOne({ name });
    const enabled = row ? row.enabled : true;
    this.#cache.set(name, { enabled, until: Date.now() + CACHE_MS });
    return enabled;
  }

  async record(name: string): Promise<Row<PluginState> | null> {
    return this.store.repo<PluginState>(PluginStateModel).findOne({ name });
  }

  /** Sensitive administration: the caller has been checked for a trusted role and fresh elevation. Audited. */
  async set(ctx: Ctx, name: string, enabled: boolean): Promise<Row<PluginState>> {
    const repo = ctx.store.repo<PluginState>(PluginStateModel);
    const write = async (): Promise<{ before: boolean; row: Row<PluginState> }> => {
      const row = await repo.findOne({ name });
      if (row)
        return {
          before: row.enabled,
          row: await repo.update(row.uid, { enabled, changedBy: ctx.principal.uid }, { expectedVersion: row.version }),
        };
      return { before: true, row: await repo.create({ name, enabled, changedBy: ctx.principal.uid }) };
    };
    let result: { before: boolean; row: Row<PluginState> };
    try {
      result = await write();
    } catch (e) {
      // Two administrators at once: the unique name or the version lets one win; the other writes on top.
      if (!(e instanceof ApiError && (e.code === 'api-112' || e.code === 'api-108'))) throw e;
      result = await write();
    }
    await writeAudit(ctx.store, ctx, {
      action: enabled ? 'plugins.enable' : 'plugins.disable',
      resource: 'plugins',
      resourceUid: name,
      before: { enabled: result.before },
      after: { enabled },
    });
    this.#cache.delete(name);
    this.events.publish([PLUGIN_STATE_CHANNEL], { type: 'plugin', action: 'update', data: { name, enabled } });
    return result.row;
  }

  close(): void {
    this.#unsubscribe();
  }
}
