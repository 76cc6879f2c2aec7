import type { ReactNode } from 'react';
import { describeError } from './api.js';

/** One section of a page: a heading, what it is for, the failure of its last change, its content. */
export function Section({
  id,
  title,
  intro,
  error,
  children,
}: {
  id: string;
  title: string;
  intro?: string;
  error?: unknown;
  children: ReactNode;
}) {
  return (
    <section id={id} aria-labelledby={`${id}-title`} className="settings-section">
      <h2 id={`${id}-title`}>{title}</h2>
      {intro && <p className="muted">{intro}</p>}
      {error !== null && error !== undefined && (
        <div className="error" role="alert">
          {describeError(error)}
        </div>
      )}
      {children}
    </section>
  );
}
