import { describeError } from './api.js';

/** A failure said to the user (an alert: screen readers read it at once); nothing when there is none. */
export function ErrorBox({ error }: { error: unknown }) {
  if (error === null || error === undefined) return null;
  return (
    <div className="error" role="alert">
      {describeError(error)}
    </div>
  );
}
