import { useEffect, useId, useRef, useState, type KeyboardEvent } from 'react';
import { completeEntry, entryAt, formatRecipient, type Recipient } from './addresses.js';

/**
 * A recipients field (To, Cc, Bcc) with suggestions for the entry under the caret: an ARIA 1.2
 * combobox — arrows move through the list, Enter or Tab takes the highlighted one, Escape closes it.
 */
export function AddressField({
  label,
  value,
  onChange,
  suggest,
  invalid,
}: {
  label: string;
  value: string;
  onChange(v: string): void;
  suggest(typed: string): Promise<Recipient[]>;
  /** Entries that are not addresses, named under the field. */
  invalid: string[];
}) {
  const id = useId();
  const input = useRef<HTMLInputElement>(null);
  const [options, setOptions] = useState<Recipient[]>([]);
  const [active, setActive] = useState(0);
  const [typed, setTyped] = useState('');
  useEffect(() => {
    if (!typed) return setOptions([]);
    let live = true;
    const t = setTimeout(() => void suggest(typed).then((o) => live && (setOptions(o), setActive(0))), 150);
    return () => {
      live = false;
      clearTimeout(t);
    };
  }, [typed, suggest]);
  const caret = () => input.current?.selectionStart ?? value.length;
  const choose = (r: Recipient) => {
    const next = completeEntry(value, caret(), r);
    onChange(next.value);
    setTyped('');
    setOptions([]);
    requestAnimationFrame(() => input.current?.setSelectionRange(next.caret, next.caret));
  };
  const open = options.length > 0;
  const onKey = (e: KeyboardEvent) => {
    if (!open) return;
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      setActive((a) => (a + (e.key === 'ArrowDown' ? 1 : options.length - 1)) % options.length);
    } else if (e.key === 'Enter' || (e.key === 'Tab' && !e.shiftKey)) {
      e.preventDefault();
      choose(options[active]);
    } else if (e.key === 'Escape') {
      e.preventDefault();
      setOptions([]);
    }
  };
  const list = `${id}-list`;
  const help = `${id}-help`;
  return (
    <div className="field address-field">
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        ref={input}
        type="text"
        role="combobox"
        autoComplete="off"
        spellCheck={false}
        aria-autocomplete="list"
        aria-expanded={open}
        aria-controls={list}
        aria-activedescendant={open ? `${list}-${active}` : undefined}
        aria-invalid={invalid.length > 0}
        aria-describedby={invalid.length ? help : undefined}
        value={value}
        onChange={(e) => {
          onChange(e.target.value);
          setTyped(entryAt(e.target.value, e.target.selectionStart ?? e.target.value.length).text);
        }}
        onKeyDown={onKey}
        onBlur={() => setOptions([])}
      />
      <ul id={list} role="listbox" aria-label={`Suggestions for ${label}`} className="suggestions" hidden={!open}>
        {options.map((r, i) => (
          <li
            key={r.address}
            id={`${list}-${i}`}
            role="option"
            aria-selected={i === active}
            onMouseDown={(e) => {
              e.preventDefault();
              choose(r);
            }}
          >
            {formatRecipient(r)}
          </li>
        ))}
      </ul>
      {invalid.length > 0 && (
        <p id={help} className="field-error">
          Not an address: {invalid.join(', ')}
        </p>
      )}
    </div>
  );
}
