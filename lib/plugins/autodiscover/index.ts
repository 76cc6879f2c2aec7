import { definePlugin } from '../api.js';
import type { PluginHostApi, PluginRequest, PluginResponse, PluginRoute } from '../api.js';
import { jsonAnswer, JSON_PROTOCOLS } from './json.js';
import { BODY_LIMIT, MOBILESYNC_RESPONSE, OUTLOOK_RESPONSE, parseRequest } from './request.js';
import { mobileSyncAnswer, outlookAnswer, providerUnavailable } from './response.js';

// The Autodiscover plugin (Spec: Autodiscover plugin): tells mail clients where the protocols this
// server offers live. Unauthenticated and rate-limited; never looks a user up, so an existing and
// a non-existing address get the same answer but for the echoed address; never redirects.
// What it advertises comes from the manifests of the plugins loaded and enabled right now
// (ActiveSync from the mobile-sync plugin, mapiHttp from the MAPI plugin), on the base URL
// mail:autodiscover:public_url. With neither plugin loaded, the XML answer is ErrorCode 601
// ("Provider is not available") and the JSON answer for ActiveSync is 404; AutodiscoverV1 (this
// plugin's own XML endpoint) is answered as soon as public_url is set.

const XML_PATH = '/autodiscover/autodiscover.xml';
const xml = (status: number, body: string): PluginResponse => ({ status, headers: { 'content-type': 'text/xml; charset=utf-8' }, body });

/** mail:autodiscover:public_url without its trailing slash, or '' while unset. */
const baseOf = (host: PluginHostApi) => host.setting('mail:autodiscover:public_url').replace(/\/+$/, '');

/** X-MapiHttpCapability: the highest MAPI over HTTP version the client speaks (MS-OXDSCLI 2.2.2.1); absent or 0: none. */
function mapiCapability(req: PluginRequest): number {
  const v = [req.headers['x-mapihttpcapability']].flat()[0];
  const n = typeof v === 'string' && /^\s*\d{1,3}\s*$/.test(v) ? Number(v) : 0;
  return n;
}

async function xmlAnswer(req: PluginRequest, host: PluginHostApi): Promise<PluginResponse> {
  const { email, schema } = parseRequest(req.body);
  const base = baseOf(host);
  const offered = base ? await host.advertised() : [];
  if (schema === 'mobilesync') {
    const eas = offered.find((p) => p.name === 'ActiveSync' && p.endpoints.url);
    return xml(200, eas ? mobileSyncAnswer(email, `${base}${eas.endpoints.url}`) : providerUnavailable());
  }
  if (schema === 'outlook') {
    const mapi = offered.find((p) => p.name === 'mapiHttp' && p.endpoints.emsmdb && p.endpoints.nspi);
    // Only a client that says it speaks MAPI over HTTP gets it; we offer no RPC over HTTP to anyone else.
    if (!mapi || mapiCapability(req) < 1) return xml(200, providerUnavailable());
    const id = `?MailboxId=${encodeURIComponent(email)}`;
    return xml(200, outlookAnswer(email, { emsmdb: `${base}${mapi.endpoints.emsmdb}${id}`, nspi: `${base}${mapi.endpoints.nspi}${id}` }));
  }
  return xml(200, providerUnavailable());
}

const errorResponses = {
  400: { description: 'not one plain address, not well-formed XML, or a DTD: {code: api-106, status, message}' },
  429: { description: 'rate limit reached (api-109)' },
};

const jsonDoc = (operationId: string, withPath: boolean): PluginRoute['doc'] => ({
  operationId,
  tags: ['autodiscover'],
  summary: `Autodiscover v2 (JSON): where ActiveSync or AutodiscoverV1 lives; ${withPath ? 'the address in the path' : 'the address in ?Email='}, ?Protocol= (case-insensitive)`,
  description: [
    `Protocol is one of ${JSON_PROTOCOLS.join(', ')}, in any case; the address must be one plain address. The answer is {Protocol, Url} on mail:autodiscover:public_url and never depends on whether the address exists.`,
    'Errors carry the spec error body and, for clients that read the de facto shape, ErrorCode and ErrorMessage: 400 InvalidProtocol (unknown or missing Protocol), 400 InvalidUser (not one plain address), 404 ProtocolNotAvailable (public_url unset, or the plugin serving that protocol is not loaded or disabled).',
  ].join(' '),
  parameters: [
    ...(withPath ? [] : [{ name: 'Email', in: 'query' as const, required: true, schema: { type: 'string', format: 'email' } }]),
    { name: 'Protocol', in: 'query', required: true, schema: { type: 'string', examples: [...JSON_PROTOCOLS] } },
  ],
  responses: {
    200: {
      description: '{Protocol, Url}',
      schema: {
        type: 'object',
        required: ['Protocol', 'Url'],
        properties: { Protocol: { type: 'string', enum: [...JSON_PROTOCOLS] }, Url: { type: 'string', format: 'uri' } },
      },
    },
    ...errorResponses,
    404: { description: 'the protocol is not offered now (code api-107, ErrorCode ProtocolNotAvailable)' },
  },
});

const jsonRoute = (path: string, operationId: string, withPath: boolean): PluginRoute => ({
  method: 'get',
  path,
  auth: 'none',
  doc: jsonDoc(operationId, withPath),
  handle: (req, { host }) =>
    jsonAnswer({ req, pathEmail: withPath ? req.params.email : undefined, base: baseOf(host), advertised: () => host.advertised() }),
});

export const autodiscoverPlugin = definePlugin({
  name: 'autodiscover',
  version: '1.0.0',
  summary: 'Autodiscover: POST /autodiscover/autodiscover.xml (mobile sync and Outlook schemas) and the JSON v2 lookup',
  settings: ['mail:autodiscover:public_url'],
  protocols: [{ name: 'AutodiscoverV1', endpoints: { url: XML_PATH } }],
  routes: [
    {
      method: 'post',
      path: XML_PATH,
      auth: 'none',
      body: { type: 'raw', limit: BODY_LIMIT },
      doc: {
        operationId: 'autodiscover_xml',
        tags: ['autodiscover'],
        summary:
          'Autodiscover (POX): mobile-sync settings by default, mapiHttp endpoints in the Outlook schema when AcceptableResponseSchema asks for it',
        description: [
          `The body is <Autodiscover><Request><EMailAddress/><AcceptableResponseSchema/></Request></Autodiscover> (any namespace), at most ${BODY_LIMIT} bytes (413 api-110 beyond). AcceptableResponseSchema ${MOBILESYNC_RESPONSE} or missing: the mobile-sync answer with the ActiveSync URL; ${OUTLOOK_RESPONSE} (case, whitespace, http or https as clients send it): the Outlook answer with a Protocol Type="mapiHttp", given only to a client that sends X-MapiHttpCapability: 1 or higher.`,
          'The display name is the address sent; no user is looked up, so every address gets the same answer but for the echoed address. Nothing is advertised until mail:autodiscover:public_url is set, and a protocol only while its plugin is loaded and enabled; otherwise, and for any other schema, the answer is the generic Error with ErrorCode 601 ("Provider is not available"). Never a redirect.',
        ].join(' '),
        parameters: [
          {
            name: 'X-MapiHttpCapability',
            in: 'header',
            required: false,
            description: 'MAPI over HTTP version the client speaks (1)',
            schema: { type: 'integer' },
          },
        ],
        requestBody: { contentType: 'text/xml', schema: { type: 'string' } },
        responses: {
          200: {
            description:
              'an Autodiscover response (AutodiscoverResponse.xsd): mobile-sync settings, Outlook mapiHttp settings, or ErrorCode 601',
            contentType: 'text/xml',
            schema: { type: 'string' },
          },
          ...errorResponses,
          413: { description: 'body over 16 KB (api-110)' },
        },
      },
      handle: (req, { host }) => xmlAnswer(req, host),
    },
    jsonRoute('/autodiscover/autodiscover.json/v1.0/:email', 'autodiscover_json_path', true),
    jsonRoute('/autodiscover/autodiscover.json/v1.0', 'autodiscover_json_v1_query', false),
    jsonRoute('/autodiscover/autodiscover.json', 'autodiscover_json_query', false),
  ],
});
