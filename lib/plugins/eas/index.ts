import { definePlugin, type PluginRoute } from '../api.js';
import { dispatch, SETTINGS } from './dispatch.js';
import { ADVERTISED_PATH, empty, PATHS, versionHeaders } from './protocol.js';
import { COMMANDS } from './commands.js';

// The mobile-sync plugin (Spec: Mobile sync plugin; MS-ASHTTP, MS-ASCMD, MS-ASWBXML): phones and
// desktop clients sync mail over Exchange ActiveSync. Served at both spellings of the path — the
// specification's /Vendor-Server-ActiveSync and /Microsoft-Server-ActiveSync, which every real
// client hard-codes — in any letter case; Autodiscover advertises the second.

const optionsDoc = (path: string): PluginRoute['doc'] => ({
  operationId: `eas_options${path.startsWith('/Microsoft') ? '_vendor' : ''}`,
  tags: ['mobile-sync'],
  summary: 'Mobile sync (ActiveSync): the protocol versions and commands this server offers; no sign-in needed',
  description: `Answers MS-ASProtocolVersions (${['14.0', '14.1', '16.0', '16.1'].join(', ')}) and MS-ASProtocolCommands, each also spelled Vendor-AS… as the specification writes them. ${path} and its other spelling (/Vendor-Server-ActiveSync, /Microsoft-Server-ActiveSync) are the same, in any letter case.`,
  responses: {
    200: {
      description: 'an empty body; the headers name the versions and commands',
      contentType: 'text/plain',
      schema: { type: 'string', maxLength: 0 },
      headers: {
        'MS-ASProtocolVersions': { description: 'the versions offered (also Vendor-ASProtocolVersions)', schema: { type: 'string' } },
        'MS-ASProtocolCommands': { description: 'the commands implemented (also Vendor-ASProtocolCommands)', schema: { type: 'string' } },
      },
    },
  },
});

const postDoc = (path: string): PluginRoute['doc'] => ({
  operationId: `eas_command${path.startsWith('/Microsoft') ? '_vendor' : ''}`,
  tags: ['mobile-sync'],
  summary: 'Mobile sync (ActiveSync) command: WBXML request and answer, dispatched on ?Cmd=',
  description: [
    'Query: Cmd (Provision, FolderSync, Sync, Ping, … — the list MS-ASProtocolCommands answers), User, DeviceId (letters and digits, at most 64), DeviceType. The base64-encoded query form is not supported (400 api-106).',
    "Headers: MS-ASProtocolVersion or Vendor-ASProtocolVersion (14.0, 14.1, 16.0, 16.1; 12.x and others: 400 api-106 with the versions offered); X-MS-PolicyKey after Provision (mail:eas:provision:require_provisioning): a device without the current key gets the command's Status 142 or 144 and provisions again; a device an administrator wiped gets 140, a blocked one 129.",
    'Body: WBXML (application/vnd.ms-sync.wbxml) up to mail:eas:max_request_bytes (413 beyond); malformed WBXML answers 400 api-106 naming the problem, and nothing is stored.',
    'Authentication: a session token, or an app password over HTTP Basic (the username may be the mailbox address). Commands this server does not implement answer 501.',
  ].join(' '),
  parameters: [
    { name: 'Cmd', in: 'query', required: true, schema: { type: 'string', enum: Object.keys(COMMANDS) } },
    { name: 'User', in: 'query', required: false, schema: { type: 'string' } },
    { name: 'DeviceId', in: 'query', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9]{1,64}$' } },
    { name: 'DeviceType', in: 'query', required: true, schema: { type: 'string' } },
    { name: 'MS-ASProtocolVersion', in: 'header', required: false, schema: { type: 'string', enum: ['14.0', '14.1', '16.0', '16.1'] } },
    { name: 'X-MS-PolicyKey', in: 'header', required: false, schema: { type: 'string' } },
  ],
  requestBody: { contentType: 'application/vnd.ms-sync.wbxml', schema: { type: 'string', format: 'binary' } },
  responses: {
    200: {
      description: "the command's WBXML answer",
      contentType: 'application/vnd.ms-sync.wbxml',
      schema: { type: 'string', format: 'binary' },
    },
    400: { description: 'base64 query form, unsupported protocol version, missing DeviceId, or malformed WBXML (api-106)' },
    401: { description: 'no valid token or app password (the realm is named)' },
    413: { description: 'body over mail:eas:max_request_bytes (api-110)' },
    501: { description: 'a command this server does not implement' },
  },
});

function routes(path: string, limit: number): PluginRoute[] {
  return [
    {
      method: 'options',
      path,
      auth: 'none',
      doc: optionsDoc(path),
      handle: () => empty(200, { ...versionHeaders(Object.keys(COMMANDS)), allow: 'OPTIONS,POST' }),
    },
    { method: 'post', path, auth: 'basic-or-token', body: { type: 'raw', limit }, doc: postDoc(path), handle: dispatch },
  ];
}

/** The largest body a route reads; mail:eas:max_request_bytes may lower it per request. */
const BODY_LIMIT = 64 * 1024 * 1024;

export const easPlugin = definePlugin({
  name: 'eas',
  version: '0.1.0',
  summary: 'Mobile sync (Exchange ActiveSync 14.0–16.1): Provision, FolderSync, Sync and Ping of mail',
  settings: SETTINGS,
  protocols: [{ name: 'ActiveSync', endpoints: { url: ADVERTISED_PATH } }],
  routes: PATHS.flatMap((p) => routes(p, BODY_LIMIT)),
});
