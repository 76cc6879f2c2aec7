import express, { type Router } from 'express';
import { z } from 'zod';
import { requireTrusted } from '../auth/index.js';
import { DomainModel } from '../settings/index.js';
import { invalid, notFound, parseOrThrow } from '../errors/index.js';
import type { OpenApiRegistry } from '../http/index.js';
import { type Deps } from '../context/index.js';
import { checkItems } from './check.js';
import { nameservers } from './lookup.js';
import { dnsChecklist } from './source.js';
import { verdicts } from './verdicts.js';
import { verifyCheckedDomains } from './verify.js';

const query = z.object({
  domain: z.string().trim().toLowerCase().max(253).optional(),
  check: z.enum(['true', 'false', '1', '0']).optional(),
});

const verifyBody = z.object({ domain: z.string().trim().toLowerCase().min(1).max(253).optional() }).strict();

const verdictSchema = {
  type: 'object',
  properties: {
    domain: { type: 'string' },
    verified: { type: 'boolean' },
    changed: { type: 'boolean', description: 'verified by this check' },
    missing: {
      type: 'array',
      items: {
        type: 'object',
        properties: { purpose: { type: 'string' }, status: { type: 'string' }, record: { type: 'string' }, fix: { type: 'string' } },
      },
    },
  },
};

const itemSchema = {
  type: 'object',
  properties: {
    purpose: { type: 'string', enum: ['mx', 'spf', 'dkim', 'dmarc', 'svc', 'autodiscover-cname', 'autodiscover-srv'] },
    domain: { type: 'string' },
    type: { type: 'string', enum: ['MX', 'TXT', 'CNAME', 'SRV'] },
    name: { type: 'string' },
    value: { type: 'string' },
    record: { type: 'string', description: 'the zone-file line to add' },
    note: { type: 'string' },
    status: { type: 'string', enum: ['present', 'missing', 'wrong', 'error'], description: 'only with check=true' },
    found: { type: 'array', items: { type: 'string' } },
    fix: { type: 'string' },
  },
};

/** GET /api/admin/dns-checklist — the records `svcmail dns` prints, for the admin console. Trusted role required. */
export function dnsChecklistRouter(deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  router.get('/api/admin/dns-checklist', async (req, res, next) => {
    try {
      requireTrusted(req.principal, deps.config, { fresh: false });
      const parsed = query.safeParse(req.query);
      if (!parsed.success)
        throw invalid(
          'invalid query',
          parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
        );
      const items = await dnsChecklist(deps.config, deps.store, parsed.data.domain);
      const live = parsed.data.check === 'true' || parsed.data.check === '1';
      if (!live) return void res.json({ items });
      const checked = await checkItems(items, nameservers(deps.config.get('mail:dns:check_nameservers')));
      const rows = await deps.store.repo<{ name: string; verified: boolean }>(DomainModel).list({ limit: 10_000 });
      res.json({ items: checked, domains: verdicts(checked, new Map(rows.map((r) => [r.name, r.verified]))) });
    } catch (e) {
      next(e);
    }
  });
  router.post('/api/admin/dns-checklist/verify', express.json({ limit: '4kb' }), async (req, res, next) => {
    try {
      const who = requireTrusted(req.principal, deps.config, { fresh: false });
      const body = parseOrThrow(verifyBody, req.body ?? {}, 'the body is optional: {"domain": "<a served domain>"}');
      const items = await dnsChecklist(deps.config, deps.store, body.domain);
      if (body.domain && !items.length) throw notFound(`${body.domain} is not a domain served here`);
      const checked = await checkItems(items, nameservers(deps.config.get('mail:dns:check_nameservers')));
      res.json({
        items: checked,
        domains: await verifyCheckedDomains(deps.store, { principal: who, ip: req.ip, requestId: req.requestId }, checked),
      });
    } catch (e) {
      next(e);
    }
  });
  openapi.add('get', '/api/admin/dns-checklist', {
    operationId: 'admin_dns_checklist',
    summary: 'DNS checklist of the served domains',
    description:
      'MX, SPF, DKIM (from the stored public key), DMARC, the _svc.<domain> TXT record, autodiscover CNAME and SRV. With check=true each record is looked up live (resolvers from mail:dns:check_nameservers) and marked present, missing or wrong with the record to add.',
    tags: ['admin'],
    auth: 'trusted',
    parameters: [
      { name: 'domain', in: 'query', description: 'only this domain', schema: { type: 'string' } },
      { name: 'check', in: 'query', description: 'look the records up live', schema: { type: 'string', enum: ['true', 'false'] } },
    ],
    responses: {
      200: {
        description: 'the checklist; with check=true also `domains`, a verdict per domain (nothing is written)',
        schema: {
          type: 'object',
          properties: { items: { type: 'array', items: itemSchema }, domains: { type: 'array', items: verdictSchema } },
        },
      },
    },
  });
  openapi.add('post', '/api/admin/dns-checklist/verify', {
    operationId: 'admin_dns_verify',
    summary: 'Check the DNS records live and verify the domains whose MX points here',
    description:
      'A domain accepts inbound mail only when it is enabled and verified. This looks every record of the served domains (or of `domain`) up live (resolvers from mail:dns:check_nameservers) and marks verified each domain whose MX record points at this server; the other records are reported with their fix. Audited as domains.verify. On a closed network without public DNS set `verified` on the domain record instead (svcmail admin domains verify D --force).',
    tags: ['admin'],
    auth: 'trusted',
    requestBody: { schema: { type: 'object', properties: { domain: { type: 'string', description: 'only this domain' } } } },
    responses: {
      200: {
        description: 'the checked records and a verdict per domain',
        schema: {
          type: 'object',
          properties: { items: { type: 'array', items: itemSchema }, domains: { type: 'array', items: verdictSchema } },
        },
      },
      404: { description: 'domain is not served here' },
    },
  });
  return router;
}
