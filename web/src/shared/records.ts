// Reading and writing a mailbox's records from a view (settings sections, contacts, tasks, notes):
// a list kept in step after each change, and the failure of the last change to show.
import { useCallback, useEffect, useState } from 'react';
import { api } from './api.js';

export interface Rec {
  uid: string;
  version: number;
}

/** The records at `path` (a list URL), read again after each change `run` makes. */
export function useRecords<T extends Rec>(path: string) {
  const [rows, setRows] = useState<T[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const load = useCallback(() => api<T[]>(path).then(setRows, setError), [path]);
  useEffect(() => {
    void load();
  }, [load]);
  /**
   * Runs a change, then reads the list again; a failure is shown and the list read back as it is.
   * `shown`: how the list looks meanwhile (a ticked box ticks at once, not after the answer).
   */
  const run = async (step: () => Promise<unknown>, shown?: (rows: T[]) => T[]): Promise<boolean> => {
    setError(null);
    if (shown) setRows((r) => r && shown(r));
    try {
      await step();
      await load();
      return true;
    } catch (e) {
      setError(e);
      await load();
      return false;
    }
  };
  return { rows, error, setError, run, reload: load };
}

export const create = (collection: string, body: unknown) => api(`/api/mail/${collection}`, { method: 'POST', body });
export const update = (collection: string, rec: Rec, patch: object) =>
  api(`/api/mail/${collection}/${encodeURIComponent(rec.uid)}`, { method: 'PUT', body: { ...patch, version: rec.version } });
export const remove = (collection: string, rec: Rec) =>
  api(`/api/mail/${collection}/${encodeURIComponent(rec.uid)}`, { method: 'DELETE', body: { version: rec.version } });
