// The key vault of a mailbox as the views read it (GET keyvault), read again after each change.
import { useCallback, useEffect, useState } from 'react';
import type { VaultView } from '../../../lib/keys/client/format.js';
import { api, ApiFailure } from '../shared/api.js';

export type { VaultView };

export const vaultPath = (mailboxUid: string) => `/api/mail/mailboxes/${encodeURIComponent(mailboxUid)}/keyvault`;

/** A change refused because the vault changed elsewhere (another tab or device): expectedMasterKeyGeneration was stale. */
export const isStale = (e: unknown): boolean => e instanceof ApiFailure && e.code === 'api-108';

export function useVault(mailboxUid: string) {
  const [vault, setVault] = useState<VaultView | null>(null);
  const [error, setError] = useState<unknown>(null);
  const reload = useCallback(() => {
    setError(null);
    return api<VaultView>(vaultPath(mailboxUid)).then(setVault, setError);
  }, [mailboxUid]);
  useEffect(() => void reload(), [reload]);
  return { vault, setVault, error, reload };
}

/** What the crypto code costs to load (pkijs, asn1js): loaded when a key is first used, not with the page. */
export const loadVaultOps = () => import('./vault-ops.js');
export const loadMailCrypto = () => import('./smime-mail.js');
