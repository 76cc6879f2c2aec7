import { existsSync, unlinkSync } from 'node:fs';
import type { Server } from 'node:http';
import { ConfigError } from '../../lib/config/index.js';
import { portHolder } from './port-holder.js';

/** A failure to listen as one line naming the setting, what is wrong and what to do (and who holds a busy port). */
export function listenError(e: NodeJS.ErrnoException, address: string, setting: string): Error {
  const port = Number(address.slice(address.lastIndexOf(':') + 1));
  switch (e.code) {
    case 'EADDRINUSE': {
      const holder = address.startsWith('/') ? null : portHolder(port);
      return new ConfigError(
        `${setting}: ${address} is already in use (EADDRINUSE)${holder ? ` by ${holder}` : ''}; stop that process or choose another address: svcmail config set ${setting} <host:port>`,
      );
    }
    case 'EACCES':
      return new ConfigError(
        `${setting}: ${address}: permission denied (EACCES); ports below 1024 need root or CAP_NET_BIND_SERVICE, a socket path a writable directory`,
      );
    case 'EADDRNOTAVAIL':
      return new ConfigError(
        `${setting}: ${address}: no such address on this host (EADDRNOTAVAIL); use one of its addresses, e.g. 127.0.0.1`,
      );
    default:
      return new ConfigError(`${setting}: cannot listen on ${address}: ${e.message}`);
  }
}

/** Listen on host:port or a unix socket path (the value of `setting`); resolves with the bound address text. */
export function listen(server: Server, address: string, setting: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const fail = (e: NodeJS.ErrnoException) => reject(listenError(e, address, setting));
    server.once('error', fail);
    const done = () => {
      server.off('error', fail);
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
