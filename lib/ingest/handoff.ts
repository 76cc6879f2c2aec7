// What the /internal/mta routes do (Spec: Internal mail hand-off): answer the MTA's domain and
// recipient lookups, and accept a hand-off whose body was staged as it streamed in. The routes in
// routes.ts call these; 403 api-119 (never 404) for a domain not served, since a 404 tells the MTA
// to reject permanently.
import { ApiError, invalid, notFound } from '../errors/index.js';
import type { StagedBlob } from '../storage/index.js';
import { acceptHandoff, type HandoffResult, type IngestDeps } from './accept.js';
import { checkAddress, lookupValue, type Envelope } from './envelope.js';
import { resolveRecipient, servedDomains } from './resolve.js';

/** GET /internal/mta/domain: an enabled, verified domain or alias and the domain it belongs to. */
export async function lookupDomain(deps: IngestDeps, value: string): Promise<{ name: string; accepted: true; canonical: string }> {
  const name = lookupValue(value, 'name');
  if (name.length > 253) throw invalid(`name: a domain name has at most 253 characters`, [{ path: 'name', message: 'too long' }]);
  const canonical = (await servedDomains(deps)).get(name);
  if (canonical === undefined)
    throw new ApiError('api-119', `Forbidden: the domain ${name} is not served here`, {
      details: [{ path: 'name', message: 'domain-not-served' }],
    });
  return { name, accepted: true, canonical };
}

/** GET /internal/mta/resolve: whether a recipient exists (404 when not, 403 api-119 when its domain is not served). */
export async function lookupRecipient(deps: IngestDeps, value: string): Promise<{ rcpt: string; exists: true; kind: 'mailbox' | 'list' }> {
  const rcpt = checkAddress(lookupValue(value, 'rcpt'), 'rcpt');
  const r = await resolveRecipient(deps, rcpt);
  if (r.kind === 'unknown' && r.reason === 'domain')
    throw new ApiError('api-119', `Forbidden: the domain of ${rcpt} is not served here`, {
      details: [{ path: 'rcpt', message: 'domain-not-served' }],
    });
  if (r.kind === 'unknown') throw notFound(`No such recipient ${rcpt}`);
  return { rcpt, exists: true, kind: r.kind };
}

/**
 * POST /internal/mta/deliver once the body is staged: queued entries commit the staged body as the
 * stored raw; whatever happens, its temporary file goes afterwards.
 */
export async function deliverStaged(deps: IngestDeps, body: StagedBlob, envelope: Envelope): Promise<HandoffResult> {
  try {
    if (!body.size) throw new ApiError('api-106', 'The body must be the raw message');
    return await acceptHandoff(deps, {
      raw: body,
      envelopeFrom: envelope.from,
      recipients: envelope.recipients,
      transactionId: envelope.transactionId,
      client: envelope.client,
    });
  } finally {
    await body.discard();
  }
}
