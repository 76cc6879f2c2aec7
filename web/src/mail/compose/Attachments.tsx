import { bytes } from '../../shared/api.js';
import type { Attachment } from '../types.js';

export interface Upload {
  name: string;
  /** Share sent, 0..1. */
  done: number;
}

/** The draft's attachments (each removable), the uploads under way with their progress, and the file picker. */
export function Attachments({
  files,
  uploads,
  onAdd,
  onRemove,
}: {
  files: Attachment[];
  uploads: Upload[];
  onAdd(files: File[]): void;
  onRemove(a: Attachment): void;
}) {
  return (
    <div className="attachments">
      {(files.length > 0 || uploads.length > 0) && (
        <ul aria-label="Attachments" className="attachment-list">
          {files.map((a) => (
            <li key={a.id}>
              {a.safeFilename} <span className="muted">{bytes(a.size)}</span>{' '}
              <button type="button" className="link" aria-label={`Remove ${a.safeFilename}`} onClick={() => onRemove(a)}>
                Remove
              </button>
            </li>
          ))}
          {uploads.map((u) => (
            <li key={u.name}>
              {u.name}{' '}
              <progress max={1} value={u.done} aria-label={`Uploading ${u.name}`}>
                {Math.round(u.done * 100)}%
              </progress>
            </li>
          ))}
        </ul>
      )}
      <label className="button secondary">
        Attach files
        <input
          type="file"
          multiple
          className="visually-hidden"
          onChange={(e) => {
            onAdd(Array.from(e.target.files ?? []));
            e.target.value = '';
          }}
        />
      </label>{' '}
      <span className="muted">or drop them here</span>
    </div>
  );
}
