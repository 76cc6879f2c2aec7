// "Prove you hold the keys" before a change of unlock methods (the page keeps no master key to make
// new wraps with): the current encryption password, a recovery code or a passkey.
import { useSecretFields as useFields } from '../../crypto/secret-fields.js';
import type { VaultView } from '../../crypto/use-vault.js';

const WORDS = {
  legend: 'Confirm with your current',
  choices: { password: 'encryption password', recovery: 'recovery code', passkey: 'passkey' },
  field: { password: 'Current encryption password', recovery: 'Recovery code' },
};

export const useSecretFields = (vault: VaultView) => useFields(vault, WORDS);
