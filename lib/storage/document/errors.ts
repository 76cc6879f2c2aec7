import { ApiError } from '../../errors/index.js';

// MongoDB driver failures as catalogue errors; others pass through untouched.

/** Duplicate key: E11000, also as one of a bulk write's write errors. */
export function isDuplicateKey(e: unknown): boolean {
  const err = e as { code?: unknown; writeErrors?: Array<{ code?: unknown }> | { code?: unknown }; errorResponse?: { code?: unknown } };
  if (err?.code === 11000 || err?.errorResponse?.code === 11000) return true;
  const writeErrors = err?.writeErrors;
  if (Array.isArray(writeErrors)) return writeErrors.some((w) => w.code === 11000);
  return writeErrors?.code === 11000;
}

/** Error classes of the driver that mean the server does not answer (or the client was closed). */
const CONNECTION_ERRORS = new Set([
  'MongoNetworkError',
  'MongoNetworkTimeoutError',
  'MongoServerSelectionError',
  'MongoNotConnectedError',
  'MongoTopologyClosedError',
  'MongoPoolClosedError',
  'MongoPoolClearedError',
]);

/** A connection failure, also one a bulk write wraps (its errorResponse is the driver's error). */
function isConnection(e: unknown): boolean {
  if (!(e instanceof Error)) return false;
  if (CONNECTION_ERRORS.has(e.name)) return true;
  const inner = (e as { errorResponse?: unknown }).errorResponse;
  return inner instanceof Error && inner !== e && CONNECTION_ERRORS.has(inner.name);
}

/** Labels the driver's withTransaction acts on (it runs the callback or the commit again): such an error must reach it as it is. */
const RETRIED = ['TransientTransactionError', 'UnknownTransactionCommitResult'];
const retried = (e: unknown): boolean =>
  RETRIED.some(
    (l) =>
      typeof (e as { hasErrorLabel?: unknown })?.hasErrorLabel === 'function' &&
      (e as { hasErrorLabel(l: string): boolean }).hasErrorLabel(l),
  );

/**
 * `final`: the error leaves the adapter (after withTransaction gave up, or outside a transaction).
 * Otherwise an error withTransaction would retry passes through untouched.
 */
export function mapError(e: unknown, final = true): unknown {
  if (e instanceof ApiError) return e;
  if (!final && retried(e)) return e;
  if (isDuplicateKey(e)) return new ApiError('api-112');
  if (isConnection(e)) return new ApiError('api-113', 'The datastore does not answer');
  return e;
}
