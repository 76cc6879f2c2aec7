import type { Logger } from '../log/index.js';
import type { Principal } from '../auth/index.js';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** The verified caller, or null (set by lib/auth authenticate). */
      principal?: Principal | null;
      /** Per-request child logger carrying the request id. */
      log?: Logger;
      requestId?: string;
    }
  }
}

export {};
