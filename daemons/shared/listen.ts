import { existsSync, unlinkSync } from 'node:fs';
import type { Server } from 'node:http';

/** Listen on host:port or a unix socket path; resolves with the bound address text. */
export function listen(server: Server, address: string): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    const done = () => {
      server.off('error', reject);
      const a = server.address();
      resolve(typeof a === 'string' ? a : a ? `${a.address.includes(':') ? `[${a.address}]` : a.address}:${a.port}` : address);
    };
    if (address.startsWith('/')) {
      if (existsSync(address)) unlinkSync(address);
      server.listen(address, done);
    } else {
      const i = address.lastIndexOf(':');
      server.listen(Number(address.slice(i + 1)), address.slice(0, i).replace(/^\[|\]$/g, ''), done);
    }
  });
}
