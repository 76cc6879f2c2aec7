// What escrow reads of a mailbox's key vault (lib/keys owns the record): the scope it is assigned
// to and the escrow wrap, the master key encrypted to that scope's certificate.

export type Vault = {
  mailboxUid: string;
  enrolled: boolean;
  escrowScopeUid?: string | null;
  masterKeyGeneration: number;
  wraps: Array<Record<string, unknown>>;
  sealedEncryptionKey?: { iv: string; ciphertext: string } | null;
  sealedSigningKey?: { iv: string; ciphertext: string } | null;
  encryptionCertificate?: string | null;
};

/** The vault's escrow wrap to the scope for its current master-key generation (an older one no longer opens it). */
export const currentEscrowWrap = (v: Vault, scopeUid: string): Record<string, unknown> | undefined =>
  v.wraps.find((w) => w.method === 'escrow' && w.scopeUid === scopeUid && w.masterKeyGeneration === v.masterKeyGeneration);
