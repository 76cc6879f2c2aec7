// The one error catalogue (Spec: Errors). Every code the service can answer is listed here with its
// status and default message; OpenAPI, the man pages and the docs test read this table.

export interface ErrorDef {
  status: number;
  message: string;
  /** One line for the docs: when a client sees this code. */
  doc: string;
}

export const catalogue = {
  'api-100': {
    status: 401,
    message: 'Sign-in required',
    doc: 'No token, an expired token, a token in the query string, or an OAuth access token (exchange it at the sign-in service for a session token).',
  },
  'api-101': {
    status: 403,
    message: 'Token not accepted',
    doc: 'The token signature, audience or issuer does not match the sign-in service (check auth:secret, auth:options:audience, auth:options:issuer).',
  },
  'api-102': { status: 403, message: 'Permission denied', doc: 'The caller can see the resource but lacks the right for this operation.' },
  'api-103': {
    status: 403,
    message: 'Trusted role required',
    doc: 'The operation needs a trusted role (for instance admin), which only counts in an elevated token.',
  },
  'api-104': {
    status: 403,
    message: 'Elevation missing or older than the maximum age',
    doc: 'Sensitive administration needs elevation no older than mail:security:elevation_max_age_seconds; re-confirm at /auth/elevate.',
  },
  'api-105': {
    status: 403,
    message: 'CSRF check failed',
    doc: 'A cookie-authenticated write must echo the csrf cookie in the x-csrf-token header.',
  },
  'api-106': { status: 400, message: 'Invalid request', doc: 'The body, path or query failed validation; details names each problem.' },
  'api-107': { status: 404, message: 'Not found', doc: 'Unknown route or record, or a mailbox-scoped record the caller cannot see.' },
  'api-108': {
    status: 409,
    message: 'Version conflict',
    doc: 'The record version (or expectedMasterKeyGeneration) is stale; reload and retry.',
  },
  'api-109': { status: 429, message: 'Too many requests', doc: 'A rate limit was reached; Retry-After says when to retry.' },
  'api-110': { status: 413, message: 'Request too large', doc: 'The body exceeds the configured limit for this route.' },
  'api-111': { status: 400, message: 'Malformed request body', doc: 'The body is not valid JSON (or not the declared content type).' },
  'api-112': { status: 409, message: 'Already exists', doc: 'A unique value (an address, a domain name, a folder name) is already taken.' },
  'api-113': {
    status: 503,
    message: 'Service unavailable',
    doc: 'A backing service (the datastore, the sign-in service) or, for GET /api/status, a daemon the api daemon forwards to or wakes does not answer (details name it), storage is full, or no answer came within request_timeout_ms; retry later.',
  },
  'api-114': {
    status: 422,
    message: 'Message refused by the scanner',
    doc: 'Outbound mail is spam or malware, or the scanner could not run.',
  },
  'api-115': {
    status: 502,
    message: 'No recipient accepted by the transport',
    doc: 'The mail transport refused every recipient; the body lists reasons.',
  },
  'api-116': {
    status: 501,
    message: 'Not implemented',
    doc: 'The request type is not supported (MAPI NotificationWait, other NSPI requests).',
  },
  'api-117': { status: 415, message: 'Unsupported media type', doc: 'The request body has a content type this route does not take.' },
  'api-118': {
    status: 401,
    message: 'Credentials rejected',
    doc: 'Basic app-password credentials were rejected; WWW-Authenticate names the realm.',
  },
  'api-119': {
    status: 403,
    message: 'Forbidden',
    doc: 'The internal hand-off refused the request (wrong secret, proxy header, or a domain not served).',
  },
  'api-120': {
    status: 409,
    message: 'Operation not allowed in the current state',
    doc: 'The record is in a state that forbids this operation (a system folder cannot be deleted, a closed matter cannot be used).',
  },
  'api-121': {
    status: 422,
    message: 'Refused by the encryption policy',
    doc: 'Send: plaintext to a recipient whose key is known where the encryption policy says automatic or a key is pinned, or ciphertext where it says prohibited; encrypt (or send plaintext) and retry.',
  },
  'api-122': {
    status: 502,
    message: 'Daemon unreachable',
    doc: 'The api daemon forwards the protocol paths (/Vendor-Server-ActiveSync, /mapi, /autodiscover) to the protocols daemon at listen:protocols and could not reach it; start it (svcmail start protocols) or route those paths with nginx.',
  },
  'api-199': {
    status: 500,
    message: 'Internal error',
    doc: 'Anything unexpected. The answer never carries internals; the request id in the log has them.',
  },
} as const satisfies Record<string, ErrorDef>;

export type ErrorCode = keyof typeof catalogue;
