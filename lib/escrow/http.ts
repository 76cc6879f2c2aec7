// What every escrow route documents alike. Each needs a trusted role with fresh elevation (Spec:
// Authentication — escrow is sensitive administration), and a record bound to a scope the caller
// does not hold answers 404 like a missing one (access.ts).

const COMMON_ERRORS: Record<number, string> = {
  403: 'api-103 / api-104: a trusted role with fresh elevation is required; api-102: see the description',
  404: 'api-107: no such record, or one bound to a scope the caller does not hold',
};

/** The documented error answers of an escrow route: the common ones, with the route's own on top. */
export const escrowErrors = (own: Record<number, string> = {}): Record<number, string> => ({ ...COMMON_ERRORS, ...own });
