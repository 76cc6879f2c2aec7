import express, { type Router } from 'express';
import { z } from 'zod';
import { defineRoute, type OpenApiRegistry } from '../http/index.js';
import type { Deps } from '../context/index.js';
import { readChecklist, verifyDomains } from './admin.js';
import { RECORD_PURPOSES } from './checklist.js';

const domainName = z.string().trim().toLowerCase().max(253);

const verdict = z.object({
  domain: z.string(),
  verified: z.boolean(),
  changed: z.boolean().describe('verified by this check'),
  missing: z.array(z.object({ purpose: z.string(), status: z.string(), record: z.string(), fix: z.string() })),
});

const item = z.object({
  purpose: z.enum(RECORD_PURPOSES),
  domain: z.string(),
  type: z.enum(['MX', 'TXT', 'CNAME', 'SRV']),
  name: z.string(),
  value: z.string(),
  record: z.string().describe('the zone-file line to add'),
  note: z.string(),
  status: z.enum(['present', 'missing', 'wrong', 'error']).optional().describe('only with check=true'),
  found: z.array(z.string()).optional(),
  fix: z.string().optional(),
});

/** GET /api/admin/dns-checklist — the records `svcmail dns` prints, for the admin console — and its live verification. Trusted role required. */
export function dnsChecklistRouter(deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  const tags = ['admin'];

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/admin/dns-checklist',
    operationId: 'admin_dns_checklist',
    summary: 'DNS checklist of the served domains',
    description:
      'MX, SPF, DKIM (from the stored public key), DMARC, the _svc.<domain> TXT record, autodiscover CNAME and SRV. With check=true each record is looked up live (resolvers from mail:dns:check_nameservers) and marked present, missing or wrong with the record to add.',
    tags,
    auth: 'trusted',
    query: z.object({
      domain: domainName.optional().describe('only this domain'),
      check: z.enum(['true', 'false', '1', '0']).optional().describe('look the records up live'),
    }),
    response: z
      .object({ items: z.array(item), domains: z.array(verdict).optional() })
      .describe('the checklist; with check=true also `domains`, a verdict per domain (nothing is written)'),
    handler: (ctx, { query }) => readChecklist(ctx, query.domain, query.check === 'true' || query.check === '1'),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/admin/dns-checklist/verify',
    operationId: 'admin_dns_verify',
    summary: 'Check the DNS records live and verify the domains whose MX points here',
    description:
      'A domain accepts inbound mail only when it is enabled and verified. This looks every record of the served domains (or of `domain`) up live (resolvers from mail:dns:check_nameservers) and marks verified each domain whose MX record points at this server; the other records are reported with their fix. Audited as domains.verify. On a closed network without public DNS set `verified` on the domain record instead (svcmail admin domains verify D --force).',
    tags,
    auth: 'trusted',
    before: [express.json({ limit: '4kb' })],
    // The body is optional: without one every served domain is checked.
    body: z.strictObject({ domain: domainName.min(1).optional().describe('only this domain') }).optional(),
    response: z.object({ items: z.array(item), domains: z.array(verdict) }).describe('the checked records and a verdict per domain'),
    errors: { 404: 'domain is not served here' },
    handler: (ctx, { body }) => verifyDomains(ctx, body?.domain),
  });
  return router;
}
