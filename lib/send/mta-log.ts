import { open } from 'node:fs/promises';

const TAIL = 64 * 1024 * 1024;

/**
 * Whether the MTA logged the Message-ID (Postfix cleanup logs `message-id=<id>` for every message
 * it accepted). Used only after a crash mid hand-off, to tell "handed over" from "maybe not".
 */
export async function mtaLogged(path: string, messageId: string): Promise<boolean> {
  if (!path || !messageId) return false;
  let fh;
  try {
    fh = await open(path, 'r');
  } catch {
    return false;
  }
  try {
    const { size } = await fh.stat();
    const start = Math.max(0, size - TAIL);
    const buf = Buffer.alloc(size - start);
    await fh.read(buf, 0, buf.length, start);
    return buf.includes(`message-id=${messageId}`);
  } finally {
    await fh.close();
  }
}
