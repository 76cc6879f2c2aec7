import { useState, type ReactNode } from 'react';
import { ErrorBox } from './ErrorBox.js';

/**
 * A form in a card, as the consoles make records: its heading (also its accessible name), the
 * failure of its last submission, and the submission (`submit` resolves when done, rejects with the
 * failure to show; the form keeps what was typed).
 */
export function CardForm({ title, submit, children }: { title: string; submit(): Promise<unknown>; children: ReactNode }) {
  const [error, setError] = useState<unknown>(null);
  return (
    <form
      className="stack card"
      aria-label={title}
      onSubmit={(e) => {
        e.preventDefault();
        setError(null);
        submit().catch(setError);
      }}
    >
      <h3>{title}</h3>
      <ErrorBox error={error} />
      {children}
    </form>
  );
}
