import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { z } from 'zod';
import { invalid } from '../api.js';

// Reading an Autodiscover request (MS-ASCMD 2.2.1.1, MS-OXDSCLI 2.2.3) without trusting it: no
// DTD (so no entity can expand), a size limit before parsing, well-formedness checked first,
// and only the two values we need taken out.

/** Spec: Limits — Autodiscover body, 16 KB. */
export const BODY_LIMIT = 16 * 1024;

export const MOBILESYNC_RESPONSE = 'http://schemas.microsoft.com/exchange/autodiscover/mobilesync/responseschema/2006';
export const OUTLOOK_RESPONSE = 'http://schemas.microsoft.com/exchange/autodiscover/outlook/responseschema/2006a';

/** mobilesync and outlook are served; other names a client asks for get the "provider not available" answer. */
export type ResponseSchema = 'mobilesync' | 'outlook' | 'unknown';

const parser = new XMLParser({
  ignoreAttributes: true,
  removeNSPrefix: true,
  ignoreDeclaration: true,
  ignorePiTags: true,
  parseTagValue: false,
  trimValues: true,
  maxNestedTags: 16,
  // Only the five predefined entities can occur (a DTD is refused below); character references are
  // left as written, so an address spelled with them is not a plain address.
  processEntities: { enabled: true, maxEntityCount: 0, maxTotalExpansions: 64, maxExpandedLength: BODY_LIMIT },
});

// zod's email check: a dot-atom local part and a host name, nothing else (no display name, no
// comments, no quoted strings, no IP literals, no list).
const plain = z.email();

/** Spec: Autodiscover accepts only a plain address. Surrounding whitespace (pretty-printed XML) is dropped; the case is kept for the echo. */
export function plainAddress(raw: unknown, path = 'EMailAddress'): string {
  if (typeof raw !== 'string')
    throw invalid(`${path} is required: one plain address such as user@example.org`, [{ path, message: 'required' }]);
  const address = raw.trim();
  if (!address || address.length > 254 || !plain.safeParse(address).success) {
    throw invalid(`${path} must be one plain address such as user@example.org (no display name, no list)`, [
      { path, message: 'not a plain address' },
    ]);
  }
  return address;
}

/** Clients differ in case, whitespace, http or https and a trailing slash; the schema they mean does not. */
function canonical(url: string): string {
  return url
    .replace(/\s+/g, '')
    .toLowerCase()
    .replace(/^https:/, 'http:')
    .replace(/\/+$/, '');
}

/** Spec: mobile sync by default; the Outlook schema when AcceptableResponseSchema asks for it. */
export function schemaOf(raw: string | undefined): ResponseSchema {
  if (raw === undefined || raw.trim() === '') return 'mobilesync';
  const c = canonical(raw);
  if (c === canonical(MOBILESYNC_RESPONSE)) return 'mobilesync';
  if (c === canonical(OUTLOOK_RESPONSE)) return 'outlook';
  return 'unknown';
}

/** The child element whose local name is `name`, whatever its case; two spellings at once are refused. */
function child(node: unknown, name: string, path: string): unknown {
  if (typeof node !== 'object' || node === null || Array.isArray(node)) return undefined;
  const keys = Object.keys(node).filter((k) => k.toLowerCase() === name.toLowerCase());
  if (keys.length > 1) throw invalid(`${path} appears more than once`, [{ path, message: 'repeated' }]);
  const v = keys.length ? (node as Record<string, unknown>)[keys[0]] : undefined;
  if (Array.isArray(v)) throw invalid(`${path} appears more than once`, [{ path, message: 'repeated' }]);
  return v;
}

export interface AutodiscoverRequest {
  email: string;
  schema: ResponseSchema;
}

export function parseRequest(body: unknown): AutodiscoverRequest {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.alloc(0);
  if (!bytes.length) throw invalid('The body must be an Autodiscover request (XML)', [{ path: 'body', message: 'empty' }]);
  const text = bytes.toString('utf8').replace(/^\uFEFF/, '');
  if (/<!DOCTYPE|<!ENTITY/i.test(text)) throw invalid('Document type declarations are not accepted', [{ path: 'body', message: 'DTD' }]);
  const ok = XMLValidator.validate(text);
  if (ok !== true)
    throw invalid(`The body is not well-formed XML: ${ok.err.msg}`, [{ path: `body:${ok.err.line}:${ok.err.col}`, message: ok.err.msg }]);
  let doc: unknown;
  try {
    doc = parser.parse(text);
  } catch (e) {
    throw invalid(`The body cannot be read as XML: ${(e as Error).message}`, [{ path: 'body', message: 'unreadable' }]);
  }
  const request = child(child(doc, 'Autodiscover', 'Autodiscover'), 'Request', 'Autodiscover/Request');
  if (request === undefined)
    throw invalid('Expected <Autodiscover><Request>…</Request></Autodiscover>', [{ path: 'Autodiscover/Request', message: 'missing' }]);
  const schemaValue = child(request, 'AcceptableResponseSchema', 'AcceptableResponseSchema');
  if (schemaValue !== undefined && typeof schemaValue !== 'string')
    throw invalid('AcceptableResponseSchema must be text', [{ path: 'AcceptableResponseSchema', message: 'not text' }]);
  return { email: plainAddress(child(request, 'EMailAddress', 'EMailAddress')), schema: schemaOf(schemaValue) };
}
