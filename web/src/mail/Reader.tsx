import { useEffect, useState } from 'react';
import { api, when } from '../shared/api.js';
import { AttachmentList, SourceDialog } from './ReaderParts.js';
import { ReceiptNotice, RemoteNotice } from './ReaderNotices.js';
import type { ComposeStart } from './compose/open.js';
import type { Folder, Message, MessageBody } from './types.js';
import { MovePicker } from './BulkBar.js';
import { Conversation, LabelPicker } from './ReaderExtras.js';
import { ErrorBox } from '../shared/ErrorBox.js';
import { SecureMessage } from './SecureMessage.js';

export interface MessageActions {
  setFlag(m: Message, field: 'seen' | 'flagged', value: boolean): Promise<void>;
  move(m: Message, folderUid: string): Promise<void>;
  /** To Deleted Items (from there: for good). */
  trash(m: Message): Promise<void>;
  /** Withdraws a sent message from internal recipients who have not read it. */
  recall(m: Message): Promise<void>;
  setLabels(m: Message, labels: string[]): Promise<void>;
}

const ANSWERS: Array<{ kind: Exclude<ComposeStart['kind'], 'new' | 'draft'>; label: string }> = [
  { kind: 'reply', label: 'Reply' },
  { kind: 'replyAll', label: 'Reply all' },
  { kind: 'forward', label: 'Forward' },
  { kind: 'forwardAttachment', label: 'Forward as attachment' },
];

/** What can be done with the open message: answer, mark, flag, delete, view the source, move, recall. */
function MessageToolbar({
  message,
  folders,
  actions,
  compose,
  onSource,
}: {
  message: Message;
  folders: Folder[];
  actions: MessageActions;
  compose(start: ComposeStart): void;
  onSource(): void;
}) {
  return (
    <div className="toolbar" role="toolbar" aria-label="Message actions">
      {ANSWERS.map((a) => (
        <button key={a.kind} type="button" className="secondary" onClick={() => compose({ kind: a.kind, of: message })}>
          {a.label}
        </button>
      ))}
      <button type="button" className="secondary" onClick={() => void actions.setFlag(message, 'seen', !message.seen)}>
        {message.seen ? 'Mark unread' : 'Mark read'}
      </button>
      <button
        type="button"
        className="secondary"
        aria-pressed={message.flagged}
        onClick={() => void actions.setFlag(message, 'flagged', !message.flagged)}
      >
        {message.flagged ? 'Unflag' : 'Flag'}
      </button>
      <button type="button" className="secondary" onClick={() => void actions.trash(message)}>
        Delete
      </button>
      <button type="button" className="secondary" onClick={onSource}>
        View source
      </button>
      <MovePicker folders={folders} except={message.folderUid} onMove={(uid) => void actions.move(message, uid)} />
      {folders.find((f) => f.uid === message.folderUid)?.role === 'sent' && (
        <button type="button" className="secondary" onClick={() => void actions.recall(message)}>
          Recall
        </button>
      )}
    </div>
  );
}

/**
 * The reading pane: the open message's header, what can be done with it, and its body in a sandboxed frame
 * (/api/mail/messages/:id/view: no script, nothing loaded from elsewhere until the reader allows it
 * for this message).
 */
export function Reader({
  message,
  address,
  folders,
  actions,
  compose,
  onOpen,
}: {
  message: Message | null;
  /** The mailbox's address (the unlock form of an encrypted message names it). */
  address: string;
  folders: Folder[];
  actions: MessageActions;
  compose(start: ComposeStart): void;
  /** Opens another message (of the conversation). */
  onOpen(m: Message): void;
}) {
  const [body, setBody] = useState<MessageBody | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [remote, setRemote] = useState(false);
  const [source, setSource] = useState(false);
  const uid = message?.uid;
  const smime = message?.smime ?? null;
  useEffect(() => {
    setSource(false);
    setBody(null);
    setError(null);
    setRemote(false);
    if (!uid) return;
    const abort = new AbortController();
    api<MessageBody>(`/api/mail/messages/${encodeURIComponent(uid)}/body`, { signal: abort.signal }).then(setBody, (e) => {
      if (!abort.signal.aborted) setError(e);
    });
    return () => abort.abort();
  }, [uid]);
  if (!message) return <p className="muted">Select a message.</p>;
  const sender = message.from?.name ? `${message.from.name} <${message.fromAddress}>` : message.fromAddress;
  const view = `/api/mail/messages/${encodeURIComponent(message.uid)}/view${remote ? '?remote=allow' : ''}`;
  return (
    <article aria-label="Message" className="message">
      <MessageToolbar message={message} folders={folders} actions={actions} compose={compose} onSource={() => setSource(true)} />
      {source && <SourceDialog message={message} onClose={() => setSource(false)} />}
      {smime ? (
        <SecureMessage message={message} address={address} />
      ) : (
        <>
          <h2>{message.subject || '(no subject)'}</h2>
          <p className="muted">
            {sender} · {when(message.date)}
          </p>
        </>
      )}
      <LabelPicker message={message} onChange={(labels) => void actions.setLabels(message, labels)} />
      <Conversation message={message} onOpen={onOpen} />
      {!smime && <AttachmentList message={message} />}
      <ErrorBox error={error} />
      {body && !remote && !smime && <RemoteNotice message={message} body={body} onAllow={() => setRemote(true)} />}
      {body?.receipt && <ReceiptNotice key={message.uid} message={message} body={body} />}
      {!smime && (
        <iframe key={view} title="Message" className="message-frame" sandbox="allow-popups allow-popups-to-escape-sandbox" src={view} />
      )}
    </article>
  );
}
