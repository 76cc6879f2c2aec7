import { requireSignedIn } from '../auth/index.js';
import type { Ctx } from '../context/index.js';
import { isApiError } from '../errors/index.js';
import { lookupKey } from '../keys/index.js';
import { directory, searchFor } from '../mail/index.js';
import type { ResourceService } from '../resources/index.js';
import type { CallerApi } from './types.js';

type LookupApi = Pick<CallerApi, 'searchMail' | 'directory' | 'encryptionCertificate'>;

/**
 * Looking things up for a caller: mail search (the caller's mailboxes, trusted roles stripped),
 * the directory every signed-in user may read, and recipients' encryption certificates (local and
 * federated key lookup, as the web app's compose uses it).
 */
export function lookupApi(ctx: Ctx, service: ResourceService): LookupApi {
  return {
    searchMail: (q) => searchFor(ctx, service, { limit: 50, page: 0, ...q }),
    async directory(q, limit) {
      requireSignedIn(ctx.principal);
      return (await directory(ctx, { q, limit, page: 0 })).items;
    },
    async encryptionCertificate(mailboxUid, address) {
      try {
        return (await lookupKey(ctx, mailboxUid, address.trim().toLowerCase())).certificate;
      } catch (e) {
        if (isApiError(e) && e.status === 404) return null;
        throw e;
      }
    },
  };
}
