// The compose view's state: the form, the saved draft and how it is saved, attachments added and
// removed, and the checks before a send. Compose.tsx draws it.
import { useCallback, useEffect, useRef, useState } from 'react';
import { api, ApiFailure, Problem } from '../../shared/api.js';
import type { Attachment, Mailbox, Message } from '../types.js';
import { parseRecipients } from './addresses.js';
import type { Upload } from './Attachments.js';
import type { EditorChange } from './Editor.js';
import { openCompose, textToHtml, type ComposeStart, type Fields } from './open.js';
import { DraftSaver, type SaveState } from './saver.js';
import type { SendMode } from './send.js';
import { uploadAttachment } from './upload.js';

/** The largest file a draft takes (the compose upload route's limit). */
const MAX_FILE = 25 * 1024 * 1024;
const FORMAT_KEY = 'svcmail:compose-format';

type DraftBody = Record<string, unknown>;
type Saver = DraftSaver<DraftBody, Message>;

/** The draft request of what the form holds (only the valid recipients: a draft is saved while addresses are still being typed). */
function bodyOf(box: Mailbox, f: Fields, sendAt: Date | null): DraftBody {
  return {
    mailboxUid: box.uid,
    from: f.from,
    to: parseRecipients(f.to).recipients,
    cc: parseRecipients(f.cc).recipients,
    bcc: parseRecipients(f.bcc).recipients,
    subject: f.subject,
    text: f.text,
    html: f.html,
    sendAt: sendAt?.toISOString() ?? null,
  };
}

const sendAtOf = (d: Message | null) => (d?.sendAt ? new Date(d.sendAt) : null);
const putDraft = (d: Message, body: DraftBody) =>
  api<Message>(`/api/mail/compose/${encodeURIComponent(d.uid)}`, { method: 'PUT', body: { ...body, version: d.version } });

const SAVE_IO = {
  create: (body: DraftBody) => api<Message>('/api/mail/compose', { method: 'POST', body }),
  update: putDraft,
  // Saved (a new version) or sent (gone) from another window meanwhile.
  isConflict: (e: unknown) => e instanceof ApiFailure && (e.code === 'api-108' || e.code === 'api-107'),
};

/** Deletes a draft like DELETE on any message. */
const deleteDraft = (d: Message) =>
  api(`/api/mail/messages/${encodeURIComponent(d.uid)}`, { method: 'DELETE', body: { version: d.version } });

/** Why the form cannot be sent as it is, or null. */
function sendProblem(f: Fields, mode: SendMode): Problem | null {
  const lists = [f.to, f.cc, f.bcc].map(parseRecipients);
  if (lists.some((l) => l.invalid.length)) return new Problem('Check the recipients marked below: they are not addresses.');
  if (!lists.some((l) => l.recipients.length)) return new Problem('Add at least one recipient.');
  if (mode.kind === 'scheduled' && !(mode.at.getTime() > Date.now())) return new Problem('Choose a time in the future to send it later.');
  return null;
}

/** Opens the draft `start` names and keeps it saved; answers the form and what can be done with it. */
export function useDraft(start: ComposeStart, box: Mailbox, done: { onSend(d: Message, mode: SendMode): void; onClose(): void }) {
  const [fields, setFields] = useState<Fields | null>(null);
  const [draft, setDraft] = useState<Message | null>(null);
  const [saveState, setSaveState] = useState<SaveState>('unsaved');
  const [error, setError] = useState<unknown>(null);
  const [uploads, setUploads] = useState<Upload[]>([]);
  const [seed, setSeed] = useState(0);
  const saver = useRef<Saver | null>(null);
  const current = useRef<Fields | null>(null);
  current.current = fields;

  useEffect(() => {
    let live = true;
    openCompose(start, box, localStorage.getItem(FORMAT_KEY) !== 'text').then(({ draft: d, fields: f }) => {
      if (!live) return;
      saver.current = new DraftSaver<DraftBody, Message>(SAVE_IO, d, (state, saved, e) => {
        setSaveState(state);
        setDraft(saved);
        setError(e);
      });
      setDraft(d);
      setSaveState(d ? 'saved' : 'unsaved');
      setFields(f);
      setSeed((s) => s + 1);
    }, setError);
    // Leaving the view any way other than Send or Discard (another message opened, a new one begun)
    // saves what was typed: nothing is lost.
    return () => {
      live = false;
      void saver.current?.flush().catch(() => undefined);
    };
  }, [start, box]);

  const update = useCallback(
    (patch: Partial<Fields>) => {
      const next = { ...current.current!, ...patch };
      setFields(next);
      saver.current?.change(bodyOf(box, next, null));
    },
    [box],
  );
  const onBody = useCallback((c: EditorChange) => update(c), [update]);
  const setRich = (rich: boolean) => {
    localStorage.setItem(FORMAT_KEY, rich ? 'html' : 'text');
    update(rich ? { html: textToHtml(current.current!.text) } : { html: null });
    setSeed((s) => s + 1);
  };

  const attach = async (files: File[]) => {
    const s = saver.current;
    if (!s || !current.current) return;
    if (!s.current) s.change(bodyOf(box, current.current, null));
    for (const file of files) {
      if (file.size > MAX_FILE) {
        setError(new Problem(`${file.name} is larger than 25 MiB, the most one file can be; share it another way.`));
        continue;
      }
      setUploads((u) => [...u, { name: file.name, done: 0 }]);
      const progress = (part: number) => setUploads((u) => u.map((x) => (x.name === file.name ? { ...x, done: part } : x)));
      await s.replace((d) => uploadAttachment<Message>(d, file, progress)).catch(setError);
      setUploads((u) => u.filter((x) => x.name !== file.name));
    }
  };
  const remove = (a: Attachment) => {
    const s = saver.current;
    if (!s?.current || !current.current) return;
    const keep = s.current.attachments.filter((x) => x.id !== a.id && !x.inline).map((x) => x.id);
    const body = { ...bodyOf(box, current.current, sendAtOf(s.current)), keepAttachments: keep };
    void s.replace((d) => putDraft(d, body)).catch(setError);
  };

  const send = async (mode: SendMode) => {
    const s = saver.current;
    const f = current.current;
    if (!s || !f) return;
    if (uploads.length) return setError(new Problem('Wait for the attachments to finish uploading, then send.'));
    const problem = sendProblem(f, mode);
    if (problem) return setError(problem);
    const sendAt = mode.kind === 'scheduled' ? mode.at : null;
    if (s.status !== 'saved' || sendAtOf(s.current)?.getTime() !== sendAt?.getTime()) s.change(bodyOf(box, f, sendAt));
    try {
      const saved = await s.flush();
      if (!saved) return;
      s.stop();
      done.onSend(saved, mode);
    } catch (e) {
      setError(e);
    }
  };
  /** Close keeps the draft (saved first); discard deletes it — once a save under way is done, so it leaves nothing behind. */
  const leave = (keep: boolean) => async () => {
    if (!keep) saver.current?.stop();
    try {
      const d = (await saver.current?.flush()) ?? draft;
      if (!keep && d) await deleteDraft(d);
      done.onClose();
    } catch (e) {
      setError(e);
    }
  };
  const [close, discard] = [leave(true), leave(false)];
  return { fields, draft, saveState, error, uploads, seed, update, onBody, setRich, attach, remove, send, close, discard };
}

export type DraftState = ReturnType<typeof useDraft>;
