// The compose view's end-to-end encryption state: once the mailbox's keys are unlocked (or the draft
// is already encrypted) every save is sealed here and the attachments stay in the page; if the keys
// lock meanwhile, saving waits for an unlock rather than store the text in the clear.
import { useCallback, useEffect, useRef, useState } from 'react';
import { api, Problem } from '../../shared/api.js';
import { useUnlocked, type UnlockedVault } from '../../crypto/keyring.js';
import type { LocalFile } from '../../crypto/mime.js';
import { vaultPath, type VaultView } from '../../crypto/use-vault.js';
import type { Mailbox, Message } from '../types.js';
import type { Fields } from './open.js';
import { localFile, threadOf, type SealedBody } from './secure.js';

/** A file of the draft the server holds, read into the page (the draft becomes sealed: files go inside it). */
async function serverFile(d: Message, a: Message['attachments'][number]): Promise<LocalFile> {
  const res = await fetch(`/api/mail/messages/${encodeURIComponent(d.uid)}/attachments/${encodeURIComponent(a.id)}`, {
    credentials: 'same-origin',
  });
  if (!res.ok) throw new Problem(`${a.safeFilename} could not be read (HTTP ${res.status}).`);
  return { name: a.safeFilename, type: a.contentType, bytes: new Uint8Array(await res.arrayBuffer()) };
}

/** The signing certificate now installed for these keys (it may have been issued since the unlock). */
async function withSigning(keys: UnlockedVault): Promise<UnlockedVault> {
  const v = await api<VaultView>(vaultPath(keys.mailboxUid)).catch(() => null);
  return v && v.masterKeyGeneration === keys.generation ? { ...keys, signingCertificate: v.signingCertificate ?? null } : keys;
}

export function useSealed(box: Mailbox) {
  const keys = useUnlocked(box.uid);
  const keysRef = useRef<UnlockedVault | null>(keys);
  keysRef.current = keys;
  const [sealedMode, setSealedMode] = useState(Boolean(keys));
  const [files, setFiles] = useState<LocalFile[]>([]);
  const filesRef = useRef<LocalFile[]>(files);
  filesRef.current = files;
  const thread = useRef<SealedBody['thread'] | null>(null);
  useEffect(() => {
    if (keys) setSealedMode(true);
  }, [keys]);

  /** At open: the draft's threading (or an answer's, made in the page), and an encrypted draft's files (or a plain draft's uploads, once sealed). */
  const adopt = useCallback(
    async (d: Message | null, opened: LocalFile[] | null, threading?: SealedBody['thread']) => {
      thread.current = threading ?? threadOf(d, box.address);
      if (opened) {
        setSealedMode(true);
        setFiles(opened);
      } else if (d && keysRef.current && d.attachments.some((a) => !a.inline))
        setFiles(await Promise.all(d.attachments.filter((a) => !a.inline).map((a) => serverFile(d, a))));
    },
    [box.address],
  );

  /** The sealed save of the form; null while the keys are locked (nothing is saved in the clear then). */
  const body = useCallback(
    (fields: Fields, recipients: string[] | null = null): SealedBody | null => {
      const k = keysRef.current;
      if (!k) return null;
      thread.current ??= threadOf(null, box.address);
      return { keys: k, fields, files: filesRef.current, recipients, thread: thread.current };
    },
    [box.address],
  );

  const addFiles = async (picked: File[]) => {
    const read = await Promise.all(picked.map(localFile));
    filesRef.current = [...filesRef.current, ...read];
    setFiles(filesRef.current);
  };
  const removeFile = (i: number) => {
    filesRef.current = filesRef.current.filter((_, j) => j !== i);
    setFiles(filesRef.current);
  };
  /** The keys for a sealed send, with the signing certificate as it is now. */
  const sendingKeys = async () => (keysRef.current ? withSigning(keysRef.current) : null);
  return { box, keys, sealedMode, files, adopt, body, addFiles, removeFile, sendingKeys, locked: sealedMode && !keys };
}

export type Sealed = ReturnType<typeof useSealed>;
