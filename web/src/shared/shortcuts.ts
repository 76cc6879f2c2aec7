// Single-key shortcuts, as Gmail and Outlook on the web have them: a key pressed while no text field
// has the focus and no modifier is held runs its action.
import { useEffect, useRef } from 'react';

export interface Shortcut {
  key: string;
  /** What the help sheet says it does. */
  does: string;
  run(): void;
}

/** Whether a key press belongs to what has the focus (typing in a field), not to the page. */
export function isTyping(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  if (!el || !el.tagName) return false;
  return el.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName);
}

/** Runs the shortcut of each plain key press on the document (the list may change every render); none while not `enabled` (the view is hidden). */
export function useShortcuts(shortcuts: Shortcut[], enabled = true): void {
  const current = useRef(shortcuts);
  current.current = enabled ? shortcuts : [];
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented || isTyping(e.target)) return;
      const hit = current.current.find((s) => s.key === e.key);
      if (!hit) return;
      e.preventDefault();
      hit.run();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);
}
