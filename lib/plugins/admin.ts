import { isoDate } from '../http/index.js';
import { z } from 'zod';
import { schema } from '../config/index.js';
import { notFound } from '../errors/index.js';
import type { Ctx } from '../context/index.js';
import { daemonOf } from './define.js';
import type { PluginHost } from './host.js';
import type { PluginManifest } from './types.js';

// The administration of the installed plugins (Spec: /api/system/plugins): what an administrator
// sees of each one and the switch that enables or disables it. The caller's access is checked by
// the route (trusted role, fresh elevation).

export const pluginName = z.string().regex(/^[a-z][a-z0-9-]{0,39}$/, 'a plugin name: lower-case letters, digits and dashes');

/** The body of a change: the state wanted. */
export const pluginStateChange = z.strictObject({ enabled: z.boolean() });

/** One plugin as the administration shows it, on the wire. */
export const pluginView = z.object({
  name: z.string(),
  version: z.string(),
  summary: z.string(),
  enabled: z.boolean().describe('stored state; no record means enabled'),
  changedBy: z.string().nullable(),
  changedAt: isoDate.nullable(),
  routes: z.array(
    z.object({
      method: z.string(),
      path: z.string(),
      daemon: z.enum(['api', 'protocols']),
      auth: z.string(),
    }),
  ),
  protocols: z.array(z.string()).describe('what Autodiscover advertises while the plugin is enabled'),
  settings: z.array(z.object({ name: z.string(), doc: z.string() })),
});

/** The installed plugin of that name (404 api-107 when none). */
export function findPlugin(host: PluginHost, name: string): PluginManifest {
  const m = host.manifests.find((x) => x.name === name);
  if (!m) throw notFound(`No plugin ${name}`);
  return m;
}

/** A plugin with its stored state, its routes (and the daemon serving each), protocols and settings. */
export async function viewPlugin(host: PluginHost, m: PluginManifest) {
  const rec = await host.states.record(m.name);
  return {
    name: m.name,
    version: m.version,
    summary: m.summary,
    enabled: rec ? rec.enabled : true,
    changedBy: rec?.changedBy ?? null,
    changedAt: rec?.updatedAt ?? null,
    routes: m.routes.map((r) => ({ method: r.method.toUpperCase(), path: r.path, daemon: daemonOf(r), auth: r.auth })),
    protocols: m.protocols.map((p) => p.name),
    settings: m.settings.map((name) => ({ name, doc: schema[name].doc })),
  };
}

/** Every installed plugin, in the host's order. */
export function listPlugins(host: PluginHost) {
  return Promise.all(host.manifests.map((m) => viewPlugin(host, m)));
}

/** Enables or disables a plugin in every daemon copy (audited as plugins.enable / plugins.disable); answers it after the change. */
export async function setPluginEnabled(ctx: Ctx, host: PluginHost, name: string, enabled: boolean) {
  const m = findPlugin(host, name);
  await host.states.set(ctx, m.name, enabled);
  return viewPlugin(host, m);
}
