import { schema } from '../config/index.js';
import type { PluginManifest, PluginRoute } from './types.js';

const NAME = /^[a-z][a-z0-9-]{0,39}$/;

/** The daemon that serves a route: /api/mail/<plugin> routes in the api daemon, exact paths in the protocols daemon. */
export function daemonOf(route: Pick<PluginRoute, 'path'>): 'api' | 'protocols' {
  return route.path.toLowerCase().startsWith('/api/') ? 'api' : 'protocols';
}

/** Checks one route of a plugin: declared once, an absolute path, under /api/mail/<plugin> when under /api, a positive body limit, documented. */
function checkRoute(m: PluginManifest, r: PluginRoute, seen: Set<string>): void {
  const where = `plugin ${m.name}`;
  const key = `${r.method} ${r.path.toLowerCase()}`;
  if (seen.has(key)) throw new Error(`${where}: ${key} declared twice`);
  seen.add(key);
  if (!r.path.startsWith('/')) throw new Error(`${where}: ${r.path} must be an absolute path`);
  const lower = r.path.toLowerCase();
  if ((lower === '/api' || lower.startsWith('/api/')) && !lower.startsWith(`/api/mail/${m.name}/`) && lower !== `/api/mail/${m.name}`) {
    throw new Error(`${where}: ${r.path}: routes under /api belong under /api/mail/${m.name}`);
  }
  if (r.body && (!Number.isInteger(r.body.limit) || r.body.limit <= 0))
    throw new Error(`${where}: ${key}: body.limit must be a positive integer`);
  if (!r.doc.operationId || !r.doc.summary) throw new Error(`${where}: ${key}: doc needs operationId and summary`);
}

/**
 * Checks a manifest once, when it is declared, so a mistake fails at start with its name rather
 * than as a strange answer later: route placement (Spec: Protocol plugin routes use their exact
 * paths; /api/mail/<plugin> by convention), settings that exist and belong to the plugin.
 */
export function definePlugin(m: PluginManifest): PluginManifest {
  const where = `plugin ${m.name}`;
  if (!NAME.test(m.name)) throw new Error(`${where}: the name must be lower-case letters, digits and dashes`);
  if (!m.version) throw new Error(`${where}: version is required`);
  const seen = new Set<string>();
  for (const r of m.routes) checkRoute(m, r, seen);
  for (const s of m.settings) {
    if (!(s in schema)) throw new Error(`${where}: setting ${s} is not declared in lib/config/settings`);
    if (!s.startsWith(`mail:${m.name}:`)) throw new Error(`${where}: setting ${s} must be named mail:${m.name}:…`);
  }
  for (const p of m.protocols) {
    for (const [k, v] of Object.entries(p.endpoints))
      if (!v.startsWith('/')) throw new Error(`${where}: protocol ${p.name} endpoint ${k} must be a path`);
  }
  return m;
}

/** Every plugin's routes, with their daemon; two plugins may not claim the same method and path. */
export function checkNoClash(manifests: readonly PluginManifest[]): void {
  const owner = new Map<string, string>();
  const names = new Set<string>();
  for (const m of manifests) {
    if (names.has(m.name)) throw new Error(`plugin ${m.name} loaded twice`);
    names.add(m.name);
    for (const r of m.routes) {
      const key = `${r.method} ${r.path.toLowerCase()}`;
      const other = owner.get(key);
      if (other) throw new Error(`plugins ${other} and ${m.name} both declare ${key}`);
      owner.set(key, m.name);
    }
  }
}
