// MS-ASHTTP: what every mobile-sync request carries and what every answer says, apart from the
// commands themselves. The specification writes the path and version header with a neutral word
// (/Vendor-Server-ActiveSync, Vendor-ASProtocolVersion); every real client hard-codes the vendor's
// spelling (/Microsoft-Server-ActiveSync, MS-ASProtocolVersion). Both are served, in any letter case.
import type { PluginRequest, PluginResponse } from '../api.js';
import { decode, encode, WbxmlError, type WbxmlElement } from './wbxml/index.js';

export const PATHS = ['/Vendor-Server-ActiveSync', '/Microsoft-Server-ActiveSync'] as const;
/** What Autodiscover advertises: the path real clients expect. */
export const ADVERTISED_PATH = '/Microsoft-Server-ActiveSync';

/** Spec: Versioning — 14.0, 14.1, 16.0 and 16.1 offered; 12.x not. */
export const VERSIONS = ['14.0', '14.1', '16.0', '16.1'] as const;
export type Version = (typeof VERSIONS)[number];

export const WBXML_TYPE = 'application/vnd.ms-sync.wbxml';

/** The answer headers of OPTIONS and of every command, in both spellings. */
export function versionHeaders(commands: readonly string[]): Record<string, string> {
  const versions = VERSIONS.join(',');
  return {
    'ms-asprotocolversions': versions,
    'vendor-asprotocolversions': versions,
    'ms-asprotocolcommands': commands.join(','),
    'vendor-asprotocolcommands': commands.join(','),
    'ms-server-activesync': '16.1',
    'vendor-server-activesync': '16.1',
  };
}

const header = (req: PluginRequest, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

/** The version a request speaks (either header spelling); 14.0 when it names none. */
export function requestVersion(req: PluginRequest): { version: Version } | { unsupported: string } {
  const asked = (header(req, 'ms-asprotocolversion') ?? header(req, 'vendor-asprotocolversion') ?? '14.0').trim();
  return (VERSIONS as readonly string[]).includes(asked) ? { version: asked as Version } : { unsupported: asked };
}

export const atLeast = (v: Version, min: Version) => Number(v) >= Number(min);

/** The plain query form (Cmd, User, DeviceId, DeviceType); null for the base64-encoded form. */
export function queryOf(req: PluginRequest): { cmd: string; user: string; deviceId: string; deviceType: string } | null {
  const one = (k: string) => {
    const v = req.query[k];
    return (Array.isArray(v) ? v[0] : v) ?? '';
  };
  const cmd = one('Cmd');
  if (!cmd) return null;
  return { cmd, user: one('User'), deviceId: one('DeviceId'), deviceType: one('DeviceType') };
}

/** X-MS-PolicyKey as sent (0 when absent or malformed). */
export function policyKeyOf(req: PluginRequest): number {
  const v = header(req, 'x-ms-policykey') ?? header(req, 'x-vendor-policykey');
  return v && /^\d{1,10}$/.test(v.trim()) ? Number(v.trim()) : 0;
}

/** A WBXML answer. */
export function wbxml(root: WbxmlElement, headers: Record<string, string> = {}): PluginResponse {
  return { status: 200, headers: { 'content-type': WBXML_TYPE, ...headers }, body: encode(root) };
}

/** An answer without a body (an empty Ping or Sync answer, OPTIONS). */
export const empty = (status = 200, headers: Record<string, string> = {}): PluginResponse => ({ status, headers });

/** The request's WBXML body, null when it has none; malformed input throws WbxmlError. */
export function bodyOf(req: PluginRequest, maxBytes: number): WbxmlElement | null {
  const buf = req.body as Buffer | undefined;
  if (!buf || buf.length === 0) return null;
  return decode(buf, { maxInputBytes: maxBytes });
}

export { WbxmlError };

/** The child elements of `el` named `tag` (any page). */
export const kids = (el: WbxmlElement | undefined, tag: string): WbxmlElement[] => el?.children?.filter((c) => c.tag === tag) ?? [];
/** The first child element named `tag`. */
export const kid = (el: WbxmlElement | undefined, tag: string): WbxmlElement | undefined => el?.children?.find((c) => c.tag === tag);
/** The text of the first child named `tag` ('' for an empty element, undefined when absent). */
export const textOf = (el: WbxmlElement | undefined, tag: string): string | undefined => {
  const k = kid(el, tag);
  return k ? (k.text ?? (k.opaque ? k.opaque.toString('utf8') : '')) : undefined;
};
