import { XMLParser } from 'fast-xml-parser';
import { productPlugins } from '../../plugins/index.js';
import { fail, ok, skip, warn, type Check, type CheckResult } from './types.js';

// The protocol-level probes: a synthetic client asks the public URL what a real one would, the
// first being Autodiscover (both XML schemas and JSON v2). The answers are read structurally here;
// the test suite validates them against the published schemas with xmllint.

const MOBILESYNC = 'http://schemas.microsoft.com/exchange/autodiscover/mobilesync/responseschema/2006';
const OUTLOOK = 'http://schemas.microsoft.com/exchange/autodiscover/outlook/responseschema/2006a';
const TIMEOUT_MS = 5000;

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@',
  removeNSPrefix: true,
  parseTagValue: false,
  processEntities: false,
});

const request = (email: string, schema: string) =>
  `<?xml version="1.0" encoding="utf-8"?>\n<Autodiscover xmlns="http://schemas.microsoft.com/exchange/autodiscover/mobilesync/requestschema/2006">\n<Request><EMailAddress>${email}</EMailAddress><AcceptableResponseSchema>${schema}</AcceptableResponseSchema></Request>\n</Autodiscover>\n`;

async function call(url: string, init: RequestInit): Promise<{ status: number; type: string; text: string }> {
  let res: Response;
  try {
    res = await fetch(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(TIMEOUT_MS) });
  } catch (e) {
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(cause?.code ?? cause?.message ?? (e as Error).message);
  }
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
}

type Node = Record<string, unknown>;
const at = (v: unknown, ...path: string[]): unknown =>
  path.reduce<unknown>((n, k) => (n && typeof n === 'object' ? (n as Node)[k] : undefined), v);
const text = (v: unknown): string =>
  typeof v === 'string' ? v : typeof v === 'object' && v && '#text' in v ? String((v as Node)['#text']) : '';

/** True when some plugin of this build advertises the protocol: a 601 for it then means "disabled or not loaded". */
const shipped = (name: string) => productPlugins().some((m) => m.protocols.some((p) => p.name === name));

/** Reads an XML answer: the advertised URLs, or the 601 "provider not available" error. */
function readXml(body: string): { error?: string; urls: string[]; kind: 'mobilesync' | 'outlook' | 'error' | 'other' } {
  const doc = parser.parse(body) as Node;
  const response = at(doc, 'Autodiscover', 'Response');
  const code = text(at(response, 'Error', 'ErrorCode'));
  if (code) return { error: `ErrorCode ${code} ${text(at(response, 'Error', 'Message'))}`.trim(), urls: [], kind: 'error' };
  const server = [at(response, 'Action', 'Settings', 'Server')].flat().filter(Boolean);
  if (server.length) return { kind: 'mobilesync', urls: server.map((s) => text(at(s, 'Url'))) };
  const protocols = [at(response, 'Account', 'Protocol')].flat().filter(Boolean);
  if (protocols.length)
    return {
      kind: 'outlook',
      urls: protocols.flatMap((p) => [text(at(p, 'MailStore', 'ExternalUrl')), text(at(p, 'AddressBook', 'ExternalUrl'))]),
    };
  return { kind: 'other', urls: [] };
}

export const checkAutodiscover: Check = async (ctx) => {
  const base = ctx.config.get('mail:autodiscover:public_url').replace(/\/+$/, '');
  if (!base)
    return skip(
      'autodiscover',
      'Autodiscover answers on the public URL',
      'mail:autodiscover:public_url is not set: Autodiscover advertises nothing (svcmail config set mail:autodiscover:public_url https://<host>)',
    );
  // Any plain address gets the same answer (no user is looked up), so the probe needs no account.
  const host = new URL(base).hostname;
  const email = `doctor-probe@${/^[a-z0-9.-]+\.[a-z]{2,}$/i.test(host) ? host : 'svcmail-doctor.invalid'}`;
  const out: CheckResult[] = [];
  const xmlProbe = async (id: string, title: string, schema: string, protocol: string, headers: Record<string, string>) => {
    try {
      const r = await call(`${base}/autodiscover/autodiscover.xml`, {
        method: 'POST',
        headers: { 'content-type': 'text/xml', ...headers },
        body: request(email, schema),
      });
      if (r.status !== 200 || !/xml/.test(r.type))
        return out.push(
          fail(
            id,
            title,
            `answered ${r.status} ${r.type} ${r.text.slice(0, 120)}`,
            'check that nginx (or the api daemon) routes /autodiscover/ to the protocols daemon and that it runs: svcmail status',
          ),
        );
      const a = readXml(r.text);
      if (a.kind === 'error') {
        return out.push(
          shipped(protocol)
            ? warn(
                id,
                title,
                `${a.error}: ${protocol} is not advertised`,
                `enable the plugin that serves ${protocol} (PUT /api/system/plugins/<name> {"enabled": true}) and check svcmail logs protocols`,
              )
            : ok(id, title, `${a.error}, as expected: no plugin of this build serves ${protocol}`),
        );
      }
      const wrong = a.urls.filter((u) => !u.startsWith(`${base}/`));
      if (a.kind === 'other' || !a.urls.length || wrong.length)
        return out.push(
          fail(
            id,
            title,
            `unexpected answer: ${wrong.length ? `URLs outside ${base}: ${wrong.join(', ')}` : r.text.slice(0, 160)}`,
            'report this as a bug',
          ),
        );
      out.push(ok(id, title, `${protocol} at ${[...new Set(a.urls)].join(', ')}`));
    } catch (e) {
      out.push(
        fail(
          id,
          title,
          `${base}: ${(e as Error).message}`,
          'check DNS and TLS for the public URL, and that the protocols daemon runs (svcmail start protocols)',
        ),
      );
    }
  };
  await xmlProbe('autodiscover:mobilesync', 'Autodiscover XML, mobile-sync schema', MOBILESYNC, 'ActiveSync', {});
  await xmlProbe('autodiscover:outlook', 'Autodiscover XML, Outlook schema (mapiHttp)', OUTLOOK, 'mapiHttp', {
    'x-mapihttpcapability': '1',
  });
  const title = 'Autodiscover JSON v2';
  try {
    const r = await call(`${base}/autodiscover/autodiscover.json/v1.0/${encodeURIComponent(email)}?Protocol=AutodiscoverV1`, {
      headers: { accept: 'application/json' },
    });
    const body = JSON.parse(r.text) as { Protocol?: string; Url?: string };
    const want = `${base}/autodiscover/autodiscover.xml`;
    out.push(
      r.status === 200 && body.Protocol === 'AutodiscoverV1' && body.Url === want
        ? ok('autodiscover:json', title, `{Protocol: AutodiscoverV1, Url: ${body.Url}}`)
        : fail(
            'autodiscover:json',
            title,
            `answered ${r.status} ${r.text.slice(0, 160)}; expected {Protocol: AutodiscoverV1, Url: ${want}}`,
            'check that the autodiscover plugin is enabled (GET /api/system/plugins) and that mail:autodiscover:public_url is the URL clients use',
          ),
    );
  } catch (e) {
    out.push(
      fail(
        'autodiscover:json',
        title,
        `${base}: ${(e as Error).message}`,
        'check DNS and TLS for the public URL, and that the protocols daemon runs (svcmail start protocols)',
      ),
    );
  }
  return out;
};
