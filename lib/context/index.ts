// What every service function is handed: the app's parts (Deps) and, for one call, who is calling
// from where (Ctx, Principal). A leaf of the layer order: types only, imported by everything above.
import type { Config } from '../config/index.js';
import type { EventBus } from '../events/index.js';
import type { Logger } from '../log/index.js';
import type { Store } from '../storage/index.js';

/** Who is calling, as verified from a token. Roles are kept as issued; trusted ones count only when elevated. */
export interface Principal {
  uid: string;
  roles: string[];
  /** Time of the identity confirmation (ms since epoch) in elevated tokens; null otherwise. */
  elevatedAt: number | null;
  /** Token expiry (ms since epoch). */
  expiresAt: number;
  via: 'bearer' | 'cookie' | 'dev' | 'basic' | 'cli';
}

/** What every service function gets: the app's parts, never Express. */
export interface Deps {
  config: Config;
  store: Store;
  events: EventBus;
  log: Logger;
}

/** One call: who, from where, with which store (a transaction's, inside one). */
export interface Ctx extends Deps {
  principal: Principal;
  ip: string;
  requestId: string;
}
