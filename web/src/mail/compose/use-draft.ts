// The compose view's state: the form, the saved draft and how it is saved, attachments added and
// removed, and the checks before a send. Compose.tsx draws it.
import { useEffect, useRef, useState } from 'react';
import { api, ApiFailure, Problem } from '../../shared/api.js';
import type { Attachment, Mailbox, Message } from '../types.js';
import { parseRecipients } from './addresses.js';
import type { Upload } from './Attachments.js';
import type { EditorChange } from './Editor.js';
import { openCompose, textToHtml, type ComposeStart, type Fields } from './open.js';
import { DraftSaver, type SaveState, type SaverIo } from './saver.js';
import type { SendMode } from './send.js';
import { uploadAttachment } from './upload.js';
import { keysOf } from '../../crypto/keyring.js';
import { createSealed, openSealedDraft, updateSealed, type SealedBody } from './secure.js';
import { openSealedAnswer } from './secure-answer.js';
import { certificatesFor, decide, fetchPlan, useEncryptionPlan, type Choice } from './use-encryption.js';
import { useSealed, type Sealed } from './use-sealed.js';

/** The largest file a draft takes (the compose upload route's limit). */
const MAX_FILE = 25 * 1024 * 1024;
const FORMAT_KEY = 'svcmail:compose-format';

type DraftBody = Record<string, unknown>;
/** One save: the JSON the server builds a plain draft from, or a draft sealed here (then the JSON is not sent). */
interface SaveBody {
  json: DraftBody;
  sealed: SealedBody | null;
}
type Saver = DraftSaver<SaveBody, Message>;

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

const isConflict = (e: unknown) => e instanceof ApiFailure && (e.code === 'api-108' || e.code === 'api-107');

/** Saves plain drafts as JSON (the server builds them) and sealed ones as the ciphertext made here. */
const saveIo = (box: Mailbox): SaverIo<SaveBody, Message> => ({
  create: (b) => (b.sealed ? createSealed(box, b.sealed) : api<Message>('/api/mail/compose', { method: 'POST', body: b.json })),
  update: (d, b) => (b.sealed ? updateSealed(box, d, b.sealed) : putDraft(d, b.json)),
  // Saved (a new version) or sent (gone) from another window meanwhile.
  isConflict,
});

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

const answersEncrypted = (start: ComposeStart): start is Extract<ComposeStart, { of: Message }> =>
  start.kind !== 'new' && start.kind !== 'draft' && start.of.smime === 'encrypted';

/** The form as read back: a sealed draft is decrypted here (null while the keys are locked: the view asks to unlock). */
async function openForm(start: ComposeStart, box: Mailbox, sealed: Sealed) {
  const rich = localStorage.getItem(FORMAT_KEY) !== 'text';
  if (answersEncrypted(start)) {
    // Only the page can quote it, and only once the keys are unlocked.
    if (!keysOf(box.uid)) return null;
    const answer = await openSealedAnswer(start, box, rich);
    await sealed.adopt(null, answer.files, answer.thread);
    return { draft: null, fields: answer.fields };
  }
  const opened = await openCompose(start, box, rich);
  const d = opened.draft;
  if (d?.smime !== 'encrypted') {
    await sealed.adopt(d, null);
    return opened;
  }
  const keys = keysOf(box.uid);
  if (!keys) return null;
  const back = await openSealedDraft(d, keys);
  await sealed.adopt(d, back.files);
  return { draft: d, fields: back.fields };
}

/** What a send saves last: sealed for the recipients when it goes encrypted, else the plain draft (its files uploaded after). */
async function finalBody(box: Mailbox, sealed: Sealed, f: Fields, sendAt: Date | null, choice: Choice): Promise<SaveBody | Problem> {
  const plan = await fetchPlan(box.uid, f);
  const decision = decide(plan, choice, Boolean(sealed.keys));
  if (decision.blocked) return new Problem(decision.blocked);
  const json = bodyOf(box, f, sendAt);
  if (!decision.encrypt) return { json, sealed: null };
  const certs = await certificatesFor(box.uid, plan!);
  if (typeof certs === 'string') return new Problem(certs);
  const keys = await sealed.sendingKeys();
  const body = sealed.body(f, certs);
  if (!keys || !body) return new Problem('Unlock your keys to send this message encrypted.');
  return { json, sealed: { ...body, keys } };
}

/** Saves the form as it goes out, then hands the draft to the send (with Undo). */
async function sendNow(
  s: Saver,
  box: Mailbox,
  sealed: Sealed,
  f: Fields,
  mode: SendMode,
  choice: Choice,
): Promise<Message | Problem | null> {
  const problem = sendProblem(f, mode);
  if (problem) return problem;
  const body = await finalBody(box, sealed, f, mode.kind === 'scheduled' ? mode.at : null, choice);
  if (body instanceof Problem) return body;
  s.change(body);
  let saved = await s.flush();
  // Sent in the clear from a sealed draft: the files kept in the page go up now.
  if (!body.sealed && sealed.sealedMode)
    for (const f of sealed.files)
      saved = await s.replace((d) =>
        uploadAttachment<Message>(d, new File([f.bytes as Uint8Array<ArrayBuffer>], f.name, { type: f.type }), () => undefined),
      );
  return saved;
}

/** The draft's files: uploaded to a plain draft (with progress), kept in the page for a sealed one. */
function useAttachments(
  saver: { current: Saver | null },
  current: { current: Fields | null },
  sealed: Sealed,
  draft: Message | null,
  setError: (e: unknown) => void,
  save: (f: Fields) => void,
) {
  const [uploads, setUploads] = useState<Upload[]>([]);
  const attach = async (files: File[]) => {
    const s = saver.current;
    if (!s || !current.current) return;
    const big = files.filter((f) => f.size > MAX_FILE);
    if (big.length)
      setError(new Problem(`${big.map((f) => f.name).join(', ')}: larger than 25 MiB, the most one file can be; share it another way.`));
    const ok = files.filter((f) => f.size <= MAX_FILE);
    if (sealed.sealedMode) return void sealed.addFiles(ok).then(() => save(current.current!), setError);
    if (!s.current) save(current.current);
    for (const file of ok) {
      setUploads((u) => [...u, { name: file.name, done: 0 }]);
      const progress = (part: number) => setUploads((u) => u.map((x) => (x.name === file.name ? { ...x, done: part } : x)));
      await s.replace((d) => uploadAttachment<Message>(d, file, progress)).catch(setError);
      setUploads((u) => u.filter((x) => x.name !== file.name));
    }
  };
  const remove = (a: Attachment) => {
    const s = saver.current;
    if (!s?.current || !current.current) return;
    if (sealed.sealedMode) return (sealed.removeFile(Number(a.id)), save(current.current));
    const keep = s.current.attachments.filter((x) => x.id !== a.id && !x.inline).map((x) => x.id);
    const body = { ...bodyOf(sealed.box, current.current, sendAtOf(s.current)), keepAttachments: keep };
    void s.replace((d) => putDraft(d, body)).catch(setError);
  };
  const attachments: Attachment[] = sealed.sealedMode
    ? sealed.files.map((f, i) => ({ id: String(i), safeFilename: f.name, contentType: f.type, size: f.bytes.length, inline: false }))
    : (draft?.attachments ?? []).filter((a) => !a.inline);

  return { uploads, attach, remove, attachments };
}

/** Opens the draft `start` names and keeps it saved; answers the form and what can be done with it. */
export function useDraft(start: ComposeStart, box: Mailbox, done: { onSend(d: Message, mode: SendMode): void; onClose(): void }) {
  const [fields, setFields] = useState<Fields | null>(null);
  const [draft, setDraft] = useState<Message | null>(null);
  const [saveState, setSaveState] = useState<SaveState>('unsaved');
  const [error, setError] = useState<unknown>(null);
  const [seed, setSeed] = useState(0);
  // An answer to encrypted mail goes encrypted unless the user says otherwise: its quote is that mail.
  const [choice, setChoice] = useState<Choice>(() => (answersEncrypted(start) ? 'on' : 'auto'));
  const [needsUnlock, setNeedsUnlock] = useState(false);
  const saver = useRef<Saver | null>(null);
  const current = useRef<Fields | null>(null);
  current.current = fields;
  const sealed = useSealed(box);
  const encryption = useEncryptionPlan(box.uid, fields);
  const retry = needsUnlock && sealed.keys ? 1 : 0;

  useEffect(() => {
    let live = true;
    openForm(start, box, sealed).then((opened) => {
      if (!live) return;
      setNeedsUnlock(!opened);
      if (!opened) return;
      saver.current = new DraftSaver<SaveBody, Message>(saveIo(box), opened.draft, (state, saved, e) => {
        setSaveState(state);
        setDraft(saved);
        setError(e);
      });
      setDraft(opened.draft);
      setSaveState(opened.draft ? 'saved' : 'unsaved');
      setFields(opened.fields);
      setSeed((n) => n + 1);
    }, setError);
    // Leaving the view any way other than Send or Discard (another message opened, a new one begun)
    // saves what was typed: nothing is lost.
    return () => {
      live = false;
      void saver.current?.flush().catch(() => undefined);
    };
    // Opened once per start, and once more after an unlock it waited for.
  }, [start, box, retry]);

  /** The save of the form: sealed while the keys are unlocked; nothing at all while a sealed draft's keys are locked. */
  const save = (f: Fields) => {
    if (!sealed.sealedMode) return saver.current?.change({ json: bodyOf(box, f, null), sealed: null });
    const body = sealed.body(f);
    if (body) saver.current?.change({ json: bodyOf(box, f, null), sealed: body });
  };
  const update = (patch: Partial<Fields>) => {
    const next = { ...current.current!, ...patch };
    setFields(next);
    save(next);
  };
  const onBody = (c: EditorChange) => update(c);
  const setRich = (rich: boolean) => {
    localStorage.setItem(FORMAT_KEY, rich ? 'html' : 'text');
    update(rich ? { html: textToHtml(current.current!.text) } : { html: null });
    setSeed((n) => n + 1);
  };

  const files = useAttachments(saver, current, sealed, draft, setError, save);
  const { uploads, attach, remove, attachments } = files;

  const send = async (mode: SendMode) => {
    const s = saver.current;
    if (!s || !current.current) return;
    if (uploads.length) return setError(new Problem('Wait for the attachments to finish uploading, then send.'));
    try {
      const saved = await sendNow(s, box, sealed, current.current, mode, choice);
      if (saved instanceof Problem) return setError(saved);
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
  const secure = { sealed, encryption, choice, setChoice, needsUnlock, decision: decide(encryption.plan, choice, Boolean(sealed.keys)) };
  return {
    fields,
    draft,
    saveState,
    error,
    uploads,
    seed,
    update,
    onBody,
    setRich,
    attach,
    remove,
    attachments,
    send,
    close,
    discard,
    secure,
  };
}

export type DraftState = ReturnType<typeof useDraft>;
