import express, { type Router } from 'express';
import { z } from 'zod';
import { requireTrusted } from '../auth/index.js';
import { invalid } from '../errors/index.js';
import type { OpenApiRegistry } from '../http/openapi.js';
import type { Deps } from '../resources/index.js';
import { checkItems } from './check.js';
import { nameservers } from './lookup.js';
import { dnsChecklist } from './source.js';

const query = z.object({ domain: z.string().trim().toLowerCase().max(253).optional(), check: z.enum(['true', 'false', '1', '0']).optional() });

const itemSchema = {
  type: 'object',
  properties: {
    purpose: { type: 'string', enum: ['mx', 'spf', 'dkim', 'dmarc', 'svc', 'autodiscover-cname', 'autodiscover-srv'] },
    domain: { type: 'string' }, type: { type: 'string', enum: ['MX', 'TXT', 'CNAME', 'SRV'] }, name: { type: 'string' },
    value: { type: 'string' }, record: { type: 'string', description: 'the zone-file line to add' }, note: { type: 'string' },
    status: { type: 'string', enum: ['present', 'missing', 'wrong', 'error'], description: 'only with check=true' },
    found: { type: 'array', items: { type: 'string' } }, fix: { type: 'string' },
  },
};

/** GET /api/admin/dns-checklist — the records `svcmail dns` prints, for the admin console. Trusted role required. */
export function dnsChecklistRouter(deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  router.get('/api/admin/dns-checklist', async (req, res, next) => {
    try {
      requireTrusted(req.principal, deps.config, { fresh: false });
      const parsed = query.safeParse(req.query);
      if (!parsed.success) throw invalid('invalid query', parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })));
      const items = await dnsChecklist(deps.config, deps.store, parsed.data.domain);
      const live = parsed.data.check === 'true' || parsed.data.check === '1';
      res.json({ items: live ? await checkItems(items, nameservers(deps.config.get('mail:dns:check_nameservers'))) : items });
    } catch (e) {
      next(e);
    }
  });
  openapi.add('get', '/api/admin/dns-checklist', {
    operationId: 'admin_dns_checklist', summary: 'DNS checklist of the served domains',
    description: 'MX, SPF, DKIM (from the stored public key), DMARC, the _svc.<domain> TXT record, autodiscover CNAME and SRV. With check=true each record is looked up live (resolvers from mail:dns:check_nameservers) and marked present, missing or wrong with the record to add.',
    tags: ['admin'], auth: 'trusted',
    parameters: [
      { name: 'domain', in: 'query', description: 'only this domain', schema: { type: 'string' } },
      { name: 'check', in: 'query', description: 'look the records up live', schema: { type: 'string', enum: ['true', 'false'] } },
    ],
    responses: { 200: { description: 'the checklist', schema: { type: 'object', properties: { items: { type: 'array', items: itemSchema } } } } },
  });
  return router;
}
