import { connect, type Socket } from 'node:net';
import type { Config } from '../config/index.js';
import { isConnectFailure, ScannerUnreachable } from './rspamd.js';

export interface VirusResult {
  infected: boolean;
  signature: string | null;
}

const CHUNK = 64 * 1024;

function open(address: string): Socket {
  if (address.startsWith('/')) return connect({ path: address });
  const i = address.lastIndexOf(':');
  return connect({ host: address.slice(0, i).replace(/^\[|\]$/g, ''), port: Number(address.slice(i + 1)) });
}

/** clamd INSTREAM: zINSTREAM\0, 4-byte big-endian chunk lengths, a zero length to end. */
export function clamdScan(config: Config, raw: Buffer): Promise<VirusResult> {
  const address = config.get('mail:scan:clamd:address');
  const timeout = config.get('mail:scan:timeout_ms');
  return new Promise<VirusResult>((resolve, reject) => {
    const sock = open(address);
    let connected = false;
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => sock.destroy(new Error(`clamd did not answer within ${timeout} ms`)), timeout);
    sock.on('connect', () => {
      connected = true;
      // Corked: the command, every chunk and its length go out in one writev, not two writes per chunk.
      sock.cork();
      sock.write('zINSTREAM\0');
      for (let off = 0; off < raw.length; off += CHUNK) {
        const part = raw.subarray(off, Math.min(raw.length, off + CHUNK));
        const len = Buffer.alloc(4);
        len.writeUInt32BE(part.length);
        sock.write(len);
        sock.write(part);
      }
      sock.write(Buffer.alloc(4));
      sock.uncork();
    });
    sock.on('data', (d) => chunks.push(d));
    sock.on('error', (e) => {
      clearTimeout(timer);
      reject(!connected && isConnectFailure(e) ? new ScannerUnreachable('clamd', e) : e);
    });
    sock.on('close', () => {
      clearTimeout(timer);
      const answer = Buffer.concat(chunks).toString('utf8').replace(/\0/g, '').trim();
      if (!answer) return reject(new Error('clamd closed without an answer'));
      const found = /^stream: (.+) FOUND$/.exec(answer);
      if (found) return resolve({ infected: true, signature: found[1] });
      if (/^stream: OK$/.test(answer)) return resolve({ infected: false, signature: null });
      reject(new Error(`clamd: ${answer}`));
    });
  });
}
