import { z } from 'zod';
import { allRefused, type Transport, type TransportResult } from './port.js';

export interface ApiTransportOptions {
  url: string;
  token: string;
  timeoutMs: number;
}

const answer = z.object({
  accepted: z.array(z.string()),
  refused: z.array(z.object({ rcpt: z.string(), reason: z.string(), permanent: z.boolean() })).default([]),
});

/**
 * A cloud mail API (mail:transport:provider api): POST {url} with JSON {raw (base64), envelopeFrom,
 * envelopeTo}, Bearer token and Idempotency-Key; it answers {accepted, refused}. 5xx, timeouts and
 * unreadable answers are temporary; other 4xx refuse every recipient outright.
 */
export function apiTransport(opts: ApiTransportOptions): Transport {
  return {
    name: 'api',
    async send(req): Promise<TransportResult> {
      if (!req.envelopeTo.length) return { accepted: [], refused: [] };
      let res: Response;
      try {
        res = await fetch(opts.url, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${opts.token}`,
            'content-type': 'application/json',
            ...(req.id ? { 'idempotency-key': req.id } : {}),
          },
          body: JSON.stringify({ raw: req.raw.toString('base64'), envelopeFrom: req.envelopeFrom, envelopeTo: req.envelopeTo }),
          redirect: 'error', // a redirect would carry the message and the token to another address
          signal: AbortSignal.timeout(opts.timeoutMs),
        });
      } catch (e) {
        return allRefused(
          req.envelopeTo,
          `mail API unreachable: ${(e as Error).name === 'TimeoutError' ? `timed out after ${opts.timeoutMs} ms` : (e as Error).message}`,
          false,
        );
      }
      if (res.status >= 500 || res.status === 429) return allRefused(req.envelopeTo, `mail API answered ${res.status}`, false);
      if (res.status >= 400)
        return allRefused(req.envelopeTo, `mail API refused the message (${res.status}): ${(await res.text()).slice(0, 300)}`, true);
      const parsed = answer.safeParse(await res.json().catch(() => null));
      if (!parsed.success) return allRefused(req.envelopeTo, 'mail API answered something unreadable', false);
      const known = new Set(req.envelopeTo);
      const accepted = parsed.data.accepted.filter((r) => known.has(r));
      const refused = parsed.data.refused.filter((r) => known.has(r.rcpt));
      // A recipient the API neither accepted nor refused is not known to be handed over: retry it.
      const answered = new Set([...accepted, ...refused.map((r) => r.rcpt)]);
      for (const rcpt of req.envelopeTo)
        if (!answered.has(rcpt)) refused.push({ rcpt, reason: 'not reported by the mail API', permanent: false });
      return { accepted, refused };
    },
    async check() {
      if (!opts.url || !opts.token) throw new Error('set mail:transport:api:url and mail:transport:api:token for the api provider');
    },
  };
}
