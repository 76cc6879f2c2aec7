import { useCallback, useEffect, useState } from 'react';
import { api } from './api.js';
import { ErrorBox } from './ErrorBox.js';

/** Runs a change (with its words for the status line), then reads again what it changed. */
export type Run = (step: () => Promise<unknown>, done: string) => Promise<boolean>;

/** A view's changes: the failure of the last one to show, what became of it, and `run`, which reads the view's data again after each. */
export function useRun(load: () => Promise<unknown>) {
  const [error, setError] = useState<unknown>(null);
  const [told, setTold] = useState('');
  const run: Run = async (step, done) => {
    setError(null);
    setTold('');
    try {
      await step();
      setTold(done);
      return true;
    } catch (e) {
      setError(e);
      return false;
    } finally {
      await load().catch(setError);
    }
  };
  return { error, setError, told, run };
}

/**
 * The answer of a route that is not a generic list (no limit, page or count: RecordTable's query
 * would be refused), and changes run against it as RecordTable runs them. Plugins, signing
 * enrolments, devices.
 */
export function useAnswer<T>(path: string) {
  const [data, setData] = useState<T | null>(null);
  const load = useCallback(() => api<T>(path).then(setData), [path]);
  const { error, setError, told, run } = useRun(load);
  useEffect(() => {
    load().catch(setError);
  }, [load, setError]);
  return { data, error, told, run };
}

/** The failure of the last read or change, and what became of the last change (read out when it changes). */
export function Outcome({ error, told }: { error: unknown; told: string }) {
  return (
    <>
      <ErrorBox error={error} />
      <p role="status" className="muted">
        {told}
      </p>
    </>
  );
}
