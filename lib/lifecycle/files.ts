import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Config } from '../config/index.js';

const UID = /^[0-9a-zA-Z-]{8,64}$/;

/**
 * Where lifecycle files live: exports/<uid>.zip (built archives) and imports/<uid>.upload (uploads
 * waiting for the import job) under mail:lifecycle:dir (else data_dir): a directory several hosts
 * share, as they share the blob store (mail:blobs:dir).
 */
export function lifecycleDir(config: Config, kind: 'exports' | 'imports'): string {
  return join(resolve(config.get('mail:lifecycle:dir') || config.get('data_dir')), kind);
}

export function exportPath(config: Config, uid: string): string {
  if (!UID.test(uid)) throw new Error('bad export uid');
  return join(lifecycleDir(config, 'exports'), `${uid}.zip`);
}

export function uploadPath(config: Config, uid: string): string {
  if (!UID.test(uid)) throw new Error('bad import uid');
  return join(lifecycleDir(config, 'imports'), `${uid}.upload`);
}

/** A fresh temporary name next to the final one (renamed into place when complete). */
export async function tempPath(config: Config, kind: 'exports' | 'imports'): Promise<string> {
  const dir = lifecycleDir(config, kind);
  await mkdir(dir, { recursive: true, mode: 0o750 });
  return join(dir, `.tmp-${randomBytes(8).toString('hex')}`);
}

export async function removeFile(path: string): Promise<void> {
  await rm(path, { force: true });
}
