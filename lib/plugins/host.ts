import type { SettingName, SettingValue } from '../config/index.js';
import { MAIL_EVENT_KINDS, type MailEventKind } from '../events/index.js';
import type { ResourceService } from '../resources/index.js';
import type { Deps } from '../context/index.js';
import { sendDepsOf, type SendDeps } from '../send/index.js';
import { callerApi } from './caller.js';
import { checkNoClash } from './define.js';
import { PluginStates } from './state.js';
import type { AdvertisedProtocol, PluginHostApi, PluginManifest } from './types.js';

interface Loaded {
  manifest: PluginManifest;
  api: PluginHostApi;
  /** False once its start hook threw: its routes answer 404 and its protocols are not advertised. */
  loaded: boolean;
  unsubscribe: Array<() => void>;
}

export interface PluginHostOptions {
  /** Replaces parts of the send path (tests use a recording transport). */
  send?: Partial<SendDeps>;
}

/**
 * Holds the plugins a daemon loaded and gives each its own scoped API (Style 7: each plugin gets
 * its own context, never global state). The protocols daemon runs the hooks; the api daemon only
 * serves /api/mail/<plugin> routes and the plugin list, so it never calls start().
 */
export class PluginHost {
  readonly states: PluginStates;
  readonly #plugins = new Map<string, Loaded>();
  #sendDeps: SendDeps | null = null;
  #started = false;

  constructor(
    readonly deps: Deps,
    readonly service: ResourceService,
    manifests: readonly PluginManifest[],
    private readonly opts: PluginHostOptions = {},
  ) {
    checkNoClash(manifests);
    this.states = new PluginStates(deps.store, deps.events);
    for (const m of manifests) this.#plugins.set(m.name, { manifest: m, api: this.#scopedApi(m), loaded: true, unsubscribe: [] });
  }

  get manifests(): PluginManifest[] {
    return [...this.#plugins.values()].map((p) => p.manifest);
  }

  api(name: string): PluginHostApi {
    const p = this.#plugins.get(name);
    if (!p) throw new Error(`plugin ${name} is not loaded`);
    return p.api;
  }

  loaded(name: string): boolean {
    return this.#plugins.get(name)?.loaded ?? false;
  }

  /** Loaded here and enabled in the store: its routes answer and its protocols are advertised. */
  async active(name: string): Promise<boolean> {
    return this.loaded(name) && this.states.enabled(name);
  }

  async advertised(): Promise<AdvertisedProtocol[]> {
    const out: AdvertisedProtocol[] = [];
    for (const p of this.#plugins.values()) {
      if (!p.manifest.protocols.length || !(await this.active(p.manifest.name))) continue;
      for (const proto of p.manifest.protocols) out.push({ ...proto, plugin: p.manifest.name });
    }
    return out;
  }

  /** Runs each plugin's start hook and subscribes its mail hooks. A plugin that throws stays unloaded; the others go on. */
  async start(): Promise<void> {
    this.#started = true;
    for (const p of this.#plugins.values()) {
      const { hooks } = p.manifest;
      try {
        await hooks?.start?.(p.api);
        for (const kind of MAIL_EVENT_KINDS) {
          const hook = hooks?.mail?.[kind];
          if (hook) p.unsubscribe.push(p.api.onMail(kind, (payload) => hook(payload, p.api)));
        }
        p.api.log.info({ version: p.manifest.version }, 'plugin loaded');
      } catch (e) {
        p.loaded = false;
        for (const u of p.unsubscribe.splice(0)) u();
        p.api.log.error({ err: e }, 'plugin failed to start; its routes answer 404 and its protocols are not advertised');
      }
    }
  }

  async stop(): Promise<void> {
    for (const p of this.#plugins.values()) {
      if (!this.#started || !p.loaded) continue;
      for (const u of p.unsubscribe.splice(0)) u();
      try {
        await p.manifest.hooks?.stop?.();
      } catch (e) {
        p.api.log.warn({ err: e }, 'plugin failed to stop cleanly');
      }
    }
    this.states.close();
  }

  #sendPath(): SendDeps {
    return (this.#sendDeps ??= sendDepsOf(this.deps, this.opts.send));
  }

  #scopedApi(m: PluginManifest): PluginHostApi {
    const log = this.deps.log.child({ plugin: m.name });
    const allowed = new Set<string>(m.settings);
    const { config, events } = this.deps;
    const active = () => this.active(m.name);
    return {
      name: m.name,
      log,
      setting<K extends SettingName>(name: K): SettingValue<K> {
        if (!allowed.has(name)) throw new Error(`plugin ${m.name} reads ${name}, which its manifest does not name`);
        return config.get(name);
      },
      advertised: () => this.advertised(),
      onMail(kind: MailEventKind, handler) {
        return events.onMail(kind, async (_k, payload) => {
          if (!(await active())) return;
          try {
            await handler(payload);
          } catch (e) {
            // At-least-once (Spec: Mail event stream): the event comes back to this handler only.
            log.warn({ err: e, kind }, 'plugin mail handler failed; the event will be retried');
            throw e;
          }
        });
      },
      // Channel names no record has: push access (daemons/push/access.ts) refuses them to every client.
      signal(topic, data) {
        events.publish([`plugin:${m.name}:${topic}`], { type: 'plugin-signal', action: topic, data });
      },
      onSignal(topic, handler) {
        return events.subscribe(`plugin:${m.name}:${topic}`, (_channel, event) => {
          try {
            handler(event.data);
          } catch (e) {
            log.warn({ err: e, topic }, 'plugin signal handler failed');
          }
        });
      },
      as: (principal, meta) => callerApi({ ...this.deps, service: this.service, sendDeps: () => this.#sendPath() }, log, principal, meta),
    };
  }
}
