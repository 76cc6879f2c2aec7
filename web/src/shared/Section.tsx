import type { ReactNode } from 'react';
import { ErrorBox } from './ErrorBox.js';

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
      <ErrorBox error={error} />
      {children}
    </section>
  );
}
