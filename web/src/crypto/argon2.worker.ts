// Argon2id off the page's thread (Spec: Key vault, password wrap): the page stays responsive while
// the key is derived. One message in ({password, kdf}), one out ({key} or {error}).
import { argon2Key } from '../../../lib/keys/client/argon2.js';
import type { Argon2Params } from '../../../lib/keys/client/format.js';

self.onmessage = async (e: MessageEvent<{ password: string; kdf: Argon2Params }>) => {
  try {
    const key = await argon2Key(e.data.password, e.data.kdf);
    self.postMessage({ key }, { transfer: [key.buffer] });
  } catch (err) {
    self.postMessage({ error: (err as Error).message });
  }
};
