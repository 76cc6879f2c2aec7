import { useState } from 'react';

/** Entries of a comma- or space-separated field, each once. */
export const splitList = (text: string): string[] => [...new Set(text.split(/[,;\s]+/).filter(Boolean))];

/**
 * A text field holding a list (addresses): the text stays as typed — a trailing comma or space is
 * kept while the next entry is written — and the list it holds is handed on at each change.
 */
export function ListInput({
  label,
  values,
  onChange,
  placeholder,
}: {
  label: string;
  values: string[];
  onChange(v: string[]): void;
  placeholder?: string;
}) {
  const [text, setText] = useState(values.join(', '));
  return (
    <input
      type="text"
      aria-label={label}
      placeholder={placeholder}
      value={text}
      onChange={(e) => {
        setText(e.target.value);
        onChange(splitList(e.target.value));
      }}
    />
  );
}
