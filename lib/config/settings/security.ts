import ipaddr from 'ipaddr.js';
import { z } from 'zod';
import { setting } from '../define.js';

const cidr = z.string().refine((v) => {
  try {
    ipaddr.parseCIDR(v);
    return true;
  } catch {
    return false;
  }
}, 'must be an address range in CIDR form, e.g. 10.20.0.0/16 or fd00:1::/48');

// Defences that are not one feature's: where the server may connect on others' behalf, and what a
// session token may claim. Spec: Authentication (Session token), Limits (access token 1 hour).
export const securitySettings = {
  'mail:security:outbound:allowed_ranges': setting(z.array(cidr), {
    default: [],
    doc: 'Address ranges (CIDR) the server may connect to when a user or another server names the target (federated key lookup, URLs an ACME server hands back) although they are not public unicast: loopback, private, link-local, unique-local, CGNAT and reserved ranges are refused otherwise. For closed networks whose federation peers have internal addresses.',
  }),
  'auth:options:max_token_age_seconds': setting(z.number().int().min(60).max(86_400), {
    default: 3600,
    doc: 'Longest lifetime (exp − iat) of a session token that is accepted; the spec issues them for 1 hour. Tokens without iat, issued in the future (beyond auth:options:clock_tolerance_seconds) or living longer are refused; svcmail token --ttl stays within it.',
  }),
  'auth:options:clock_tolerance_seconds': setting(z.number().int().min(0).max(300), {
    default: 60,
    doc: 'Clock difference with the sign-in service tolerated on iat, exp and elevated.',
  }),
};
