import { useEffect, useState } from 'react';
import { bytes, describeError } from '../shared/api.js';
import type { Attachment, Message } from './types.js';

// Parts of the reading pane beside the body: the attachments (downloaded; pictures and short text
// previewed in the page) and the raw source.

const PREVIEW_IMAGE = /^image\/(png|jpeg|gif|webp|avif|bmp)$/;
const PREVIEW_TEXT_MAX = 256 * 1024;
const fileUrl = (m: Message, a: Attachment) => `/api/mail/messages/${encodeURIComponent(m.uid)}/attachments/${encodeURIComponent(a.id)}`;

/** A text attachment shown as text (never as HTML). */
function TextPreview({ url }: { url: string }) {
  const [text, setText] = useState<string | null>(null);
  useEffect(() => {
    void fetch(url, { credentials: 'same-origin' })
      .then((r) => (r.ok ? r.text() : Promise.reject(new Error(String(r.status)))))
      .then(setText, () => setText('This file could not be read; download it instead.'));
  }, [url]);
  return <pre className="preview-text">{text ?? 'Loading…'}</pre>;
}

/** The message's attachments: each downloadable under its safe name; pictures and short text files can be looked at here. */
export function AttachmentList({ message }: { message: Message }) {
  const files = message.attachments.filter((a) => !a.inline);
  if (!files.length) return null;
  return (
    <ul className="attachment-list reader-attachments" aria-label="Attachments">
      {files.map((a) => {
        const url = fileUrl(message, a);
        const previewable = PREVIEW_IMAGE.test(a.contentType) || (a.contentType.startsWith('text/plain') && a.size <= PREVIEW_TEXT_MAX);
        return (
          <li key={a.id}>
            <a href={url} download={a.safeFilename}>
              {a.safeFilename}
            </a>{' '}
            <span className="muted">{bytes(a.size)}</span>
            {previewable && (
              <details>
                <summary>Preview</summary>
                {PREVIEW_IMAGE.test(a.contentType) ? (
                  <img className="preview-image" src={url} alt={`Preview of ${a.safeFilename}`} />
                ) : (
                  <TextPreview url={url} />
                )}
              </details>
            )}
          </li>
        );
      })}
    </ul>
  );
}

/** The message's raw source, as text, in a dialog. */
export function SourceDialog({ message, onClose }: { message: Message; onClose(): void }) {
  const [source, setSource] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    void fetch(`/api/mail/messages/${encodeURIComponent(message.uid)}/raw`, { credentials: 'same-origin' })
      .then((r) => (r.ok ? r.text() : Promise.reject(new Error(String(r.status)))))
      .then(setSource, setError);
  }, [message.uid]);
  return (
    <div className="backdrop" onClick={onClose}>
      <div
        className="dialog source-dialog"
        role="dialog"
        aria-modal="true"
        aria-label="Message source"
        onClick={(e) => e.stopPropagation()}
        onKeyDown={(e) => e.key === 'Escape' && onClose()}
      >
        <button type="button" className="secondary" onClick={onClose} autoFocus>
          Close
        </button>
        {error !== null ? <p className="error">{describeError(error)}</p> : <pre className="preview-text">{source ?? 'Loading…'}</pre>}
      </div>
    </div>
  );
}
