import { z } from 'zod';
import { setting } from '../define.js';

const limit = (windowMs: number, max: number, who: string) => ({
  window: setting(z.number().int().positive(), { default: windowMs, doc: `Rate-limit window (ms) for ${who}.` }),
  max: setting(z.number().int().positive(), { default: max, doc: `Requests allowed per window for ${who}.` }),
});
const anon = limit(60_000, 300, 'anonymous callers, per client address (IPv6 per /64)');
const authed = limit(60_000, 3000, 'signed-in callers, per user');

// Spec: Authentication (App passwords), Limits (Rate limiting).
export const signinSettings = {
  'mail:basic_auth:paths': setting(z.array(z.string().regex(/^\/[^\s?#]*$/, 'must be an absolute path')), {
    default: ['/mapi', '/Vendor-Server-ActiveSync', '/Microsoft-Server-ActiveSync'],
    doc: "Paths (and everything below them, in any letter case) where an app password over HTTP Basic is accepted; nowhere else. The mobile-sync path in both spellings: the specification's and the one real clients send.",
  }),
  'mail:basic_auth:cache_ttl_ms': setting(z.number().int().nonnegative(), {
    default: 300_000,
    doc: 'How long a token obtained for a Basic header is reused (never beyond its expiry).',
  }),
  'mail:basic_auth:realm': setting(
    z
      .string()
      .min(1)
      .max(100)
      .regex(/^[^"\\]+$/, 'must not contain quotes or backslashes'),
    { default: 'svcmail', doc: 'Realm named in WWW-Authenticate when Basic credentials are rejected.' },
  ),
  'mail:basic_auth:throttle:window_ms': setting(z.number().int().positive(), {
    default: 900_000,
    doc: 'Window of the failed Basic attempt counters.',
  }),
  'mail:basic_auth:throttle:per_address_user': setting(z.number().int().positive(), {
    default: 10,
    doc: 'Failed Basic attempts allowed per client address and username in the window.',
  }),
  'mail:basic_auth:throttle:per_address': setting(z.number().int().positive(), {
    default: 50,
    doc: 'Failed Basic attempts allowed per client address in the window.',
  }),
  'mail:basic_auth:throttle:per_user': setting(z.number().int().positive(), {
    default: 30,
    doc: 'Failed Basic attempts allowed per username in the window.',
  }),
  'rateLimit:window_ms': anon.window,
  'rateLimit:max': anon.max,
  'rateLimit:authenticated:window_ms': authed.window,
  'rateLimit:authenticated:max': authed.max,
  trusted_proxies: setting(z.array(z.string().min(1)), {
    default: [],
    doc: 'Proxies whose X-Forwarded-For is believed (addresses, CIDR ranges or loopback/linklocal/uniquelocal); from anyone else it is ignored.',
  }),
};
