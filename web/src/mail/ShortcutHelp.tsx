import { useEffect, useRef } from 'react';
import type { Shortcut } from '../shared/shortcuts.js';

/** The help sheet: every shortcut of the page and what it does. Escape or the button closes it; focus returns where it was. */
export function ShortcutHelp({ shortcuts, onClose }: { shortcuts: Shortcut[]; onClose: () => void }) {
  const close = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    const before = document.activeElement as HTMLElement | null;
    close.current?.focus();
    const onKey = (e: KeyboardEvent) => e.key === 'Escape' && onClose();
    document.addEventListener('keydown', onKey);
    return () => {
      document.removeEventListener('keydown', onKey);
      before?.focus();
    };
  }, [onClose]);
  return (
    <div className="backdrop">
      <div role="dialog" aria-modal="true" aria-labelledby="shortcut-title" className="dialog">
        <h2 id="shortcut-title">Keyboard shortcuts</h2>
        <table>
          <tbody>
            {shortcuts.map((s) => (
              <tr key={s.key}>
                <th scope="row">
                  <kbd>{s.key}</kbd>
                </th>
                <td>{s.does}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <button ref={close} type="button" onClick={onClose}>
          Close
        </button>
      </div>
    </div>
  );
}
