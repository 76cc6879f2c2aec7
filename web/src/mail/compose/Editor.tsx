import { useEffect, useRef } from 'react';

// The message text: a plain textarea, or a simple rich editor (bold, italic, lists, links) on a
// contenteditable element. The HTML put in it comes from the server, sanitized; it is parsed in an
// inert document first, and remote images are parked (data-remote-src) so that writing a reply never
// tells a sender the message was opened. They are put back when the HTML is read out.

const PARKED = 'data-remote-src';
const PARKED_STYLE = 'data-remote-style';
const isRemote = (src: string) => /^(https?:)?\/\//i.test(src.trim());
/** CSS that would load something from elsewhere (a background image, a font). */
const loadsFromElsewhere = (css: string) => /url\(\s*(?:["']|&quot;)?\s*(?:https?:)?\/\//i.test(css);

/** The editor's content from server HTML: parsed without loading anything, remote images parked. */
function inert(html: string): DocumentFragment {
  const doc = new DOMParser().parseFromString(html, 'text/html');
  for (const img of Array.from(doc.querySelectorAll('img[src]'))) {
    const src = img.getAttribute('src') ?? '';
    if (!isRemote(src)) continue;
    img.setAttribute(PARKED, src);
    img.removeAttribute('src');
  }
  // The page's CSP ignores a message's styles anyway; parked too, so no policy change can let them load.
  for (const el of Array.from(doc.querySelectorAll('[style]'))) {
    const css = el.getAttribute('style') ?? '';
    if (!loadsFromElsewhere(css)) continue;
    el.setAttribute(PARKED_STYLE, css);
    el.removeAttribute('style');
  }
  for (const el of Array.from(doc.querySelectorAll('style'))) {
    if (!loadsFromElsewhere(el.textContent ?? '')) continue;
    el.setAttribute(PARKED_STYLE, el.textContent ?? '');
    el.textContent = '';
  }
  const out = document.createDocumentFragment();
  out.append(...Array.from(doc.body.childNodes).map((n) => document.importNode(n, true)));
  return out;
}

/** The editor's HTML as it is saved: parked images given their sources back. */
function readOut(el: HTMLElement): string {
  const copy = el.cloneNode(true) as HTMLElement;
  for (const img of Array.from(copy.querySelectorAll(`img[${PARKED}]`))) {
    img.setAttribute('src', img.getAttribute(PARKED) ?? '');
    img.removeAttribute(PARKED);
  }
  for (const el of Array.from(copy.querySelectorAll(`[${PARKED_STYLE}]`))) {
    if (el.tagName === 'STYLE') el.textContent = el.getAttribute(PARKED_STYLE);
    else el.setAttribute('style', el.getAttribute(PARKED_STYLE) ?? '');
    el.removeAttribute(PARKED_STYLE);
  }
  return copy.innerHTML;
}

export interface EditorChange {
  text: string;
  html: string | null;
}

const TOOLS: Array<{ label: string; command: string; key?: string }> = [
  { label: 'Bold', command: 'bold', key: 'b' },
  { label: 'Italic', command: 'italic', key: 'i' },
  { label: 'Bulleted list', command: 'insertUnorderedList' },
  { label: 'Numbered list', command: 'insertOrderedList' },
  { label: 'Link', command: 'createLink' },
];

/**
 * The body field. `html` null: plain text. `seed` changes when the content is replaced from outside
 * (a draft loaded, the format switched); typing does not re-render the rich editor's content.
 */
export function Editor({
  text,
  html,
  seed,
  onChange,
}: {
  text: string;
  html: string | null;
  seed: number;
  onChange(c: EditorChange): void;
}) {
  const rich = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (html === null || !rich.current) return;
    rich.current.replaceChildren(inert(html));
    // Only a new seed (or switching to rich) replaces the content: typing must not reset the caret.
  }, [seed, html === null]);
  const changed = () => rich.current && onChange({ html: readOut(rich.current), text: rich.current.innerText });
  const run = (command: string) => {
    rich.current?.focus();
    if (command === 'createLink') {
      const url = prompt('Link address (https://…)');
      if (!url || !/^(https?:|mailto:)/i.test(url.trim())) return;
      document.execCommand(command, false, url.trim());
    } else document.execCommand(command);
    changed();
  };
  if (html === null)
    return (
      <textarea
        className="compose-text"
        aria-label="Message"
        value={text}
        rows={14}
        onChange={(e) => onChange({ text: e.target.value, html: null })}
      />
    );
  return (
    <div className="editor">
      <div role="toolbar" aria-label="Formatting" className="toolbar">
        {TOOLS.map((t) => (
          <button
            key={t.command}
            type="button"
            className="secondary"
            onMouseDown={(e) => e.preventDefault()}
            onClick={() => run(t.command)}
            title={t.key ? `${t.label} (Ctrl+${t.key.toUpperCase()})` : t.label}
          >
            {t.label}
          </button>
        ))}
      </div>
      <div
        ref={rich}
        className="compose-rich"
        role="textbox"
        aria-multiline="true"
        aria-label="Message"
        contentEditable
        suppressContentEditableWarning
        tabIndex={0}
        onInput={changed}
      />
    </div>
  );
}
