import { useRef, useState } from 'react';
import { api } from '../shared/api.js';
import { ErrorBox } from '../shared/ErrorBox.js';

interface ImportAnswer {
  imported: number;
  failed: number;
  results: Array<{ status?: number; error?: { message?: string } | string | null }>;
}

interface Props {
  /** What is exchanged, for the labels: "calendar" (iCalendar) or "contacts" (vCard). */
  what: string;
  /** The export route and the import route of the resource, with the mailbox in their query. */
  exportPath: string;
  importPath: string;
  /** The file type: text/calendar or text/vcard, and the extensions a file picker offers. */
  type: string;
  accept: string;
  /** Called after an import wrote something. */
  imported(): void;
}

/** Export the mailbox's calendar or contacts as a file, and import one: each item succeeds or fails on its own, and the page says how many did. */
export function ImportExport({ what, exportPath, importPath, type, accept, imported }: Props) {
  const [busy, setBusy] = useState(false);
  const [told, setTold] = useState('');
  const [error, setError] = useState<unknown>(null);
  const picker = useRef<HTMLInputElement>(null);
  const take = async (file: File) => {
    setBusy(true);
    setError(null);
    setTold(`Importing ${file.name}…`);
    try {
      const answer = await api<ImportAnswer>(importPath, { method: 'POST', raw: { body: file, type } });
      setTold(
        answer.failed
          ? `${answer.imported} imported; ${answer.failed} could not be (not valid, or there already).`
          : `${answer.imported} imported.`,
      );
      if (answer.imported) imported();
    } catch (e) {
      setTold('');
      setError(e);
    } finally {
      setBusy(false);
      if (picker.current) picker.current.value = '';
    }
  };
  return (
    <div className="toolbar" role="group" aria-label={`Import and export ${what}`}>
      <a className="button secondary" href={exportPath} download>
        Export {what}
      </a>
      <label className="button secondary">
        Import {what}…
        <input
          ref={picker}
          type="file"
          className="visually-hidden"
          accept={accept}
          disabled={busy}
          onChange={(e) => {
            const file = e.target.files?.[0];
            if (file) void take(file);
          }}
        />
      </label>
      <span role="status">{told}</span>
      <ErrorBox error={error} />
    </div>
  );
}
