import { ApiError } from '../api.js';
import type { AdvertisedProtocol, PluginRequest, PluginResponse } from '../api.js';
import { plainAddress } from './request.js';

// Autodiscover v2 (the JSON form Outlook and mobile clients try first):
// GET /autodiscover/autodiscover.json/v1.0/<address>?Protocol=<name>, or ?Email=&Protocol=.
// Success is {Protocol, Url}; a failure carries the spec's error body (code, status, message) and,
// for clients that parse the de facto shape, ErrorCode and ErrorMessage with the same text.

/** The names this server can answer, as clients spell them; matched case-insensitively. */
export const JSON_PROTOCOLS = ['ActiveSync', 'AutodiscoverV1'] as const;

const json = (status: number, body: Record<string, unknown>): PluginResponse => ({
  status,
  headers: { 'content-type': 'application/json; charset=utf-8' },
  body,
});

/** The spec's error body plus the de facto {ErrorCode, ErrorMessage}. */
export function jsonError(err: ApiError, errorCode: string): PluginResponse {
  return json(err.status, { ...err.toBody(), ErrorCode: errorCode, ErrorMessage: err.message });
}

/** A query parameter by name, whatever case the client used; null when it is given more than once. */
function param(query: PluginRequest['query'], name: string): string | undefined | null {
  const keys = Object.keys(query).filter((k) => k.toLowerCase() === name.toLowerCase());
  const values = keys.flatMap((k) => [query[k]].flat()).filter((v): v is string => typeof v === 'string');
  return values.length > 1 ? null : values[0];
}

export interface JsonAnswerInput {
  req: PluginRequest;
  /** The address from the path, when the route has one. */
  pathEmail?: string;
  /** mail:autodiscover:public_url without a trailing slash; empty when unset. */
  base: string;
  advertised: () => Promise<AdvertisedProtocol[]>;
}

export async function jsonAnswer({ req, pathEmail, base, advertised }: JsonAnswerInput): Promise<PluginResponse> {
  const asked = param(req.query, 'Protocol');
  if (asked === null) return jsonError(new ApiError('api-106', 'Protocol is given more than once'), 'InvalidProtocol');
  const email = pathEmail ?? param(req.query, 'Email');
  if (email === null) return jsonError(new ApiError('api-106', 'Email is given more than once'), 'InvalidUser');
  try {
    // Validated only: the answer never depends on who asks (no enumeration).
    plainAddress(email, pathEmail !== undefined ? 'email' : 'Email');
  } catch (e) {
    if (e instanceof ApiError) return jsonError(e, 'InvalidUser');
    throw e;
  }
  if (!asked) return jsonError(new ApiError('api-106', `Protocol is required: one of ${JSON_PROTOCOLS.join(', ')}`), 'InvalidProtocol');
  const name = JSON_PROTOCOLS.find((p) => p.toLowerCase() === asked!.trim().toLowerCase());
  if (!name)
    return jsonError(
      new ApiError(
        'api-106',
        `The protocol ${JSON.stringify(asked).slice(0, 80)} is not supported; supported values are ${JSON_PROTOCOLS.join(', ')}`,
      ),
      'InvalidProtocol',
    );
  // Spec: until mail:autodiscover:public_url is set nothing is advertised; a protocol only while its plugin is loaded.
  const proto = base ? (await advertised()).find((p) => p.name === name) : undefined;
  if (!proto?.endpoints.url) return jsonError(new ApiError('api-107', `${name} is not offered by this server`), 'ProtocolNotAvailable');
  return json(200, { Protocol: name, Url: `${base}${proto.endpoints.url}` });
}
