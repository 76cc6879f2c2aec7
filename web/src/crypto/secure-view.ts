// Showing a message decrypted in this browser. The server's sanitizer never sees it, so DOMPurify
// cleans it here; it goes into a frame under the same policy the server gives its own message
// documents (no script, nothing loaded from elsewhere until the reader allows it: a meta element,
// as a srcdoc document has no answer headers). A srcdoc document also inherits the page's policy,
// which allows no inline style: the message's style attributes and <style> elements are taken out
// and applied through the CSSOM once the frame has loaded (the frame is same-origin for that, and
// runs no script: sandbox without allow-scripts).
import DOMPurify from 'dompurify';
import { MESSAGE_STYLE, messageDirectives } from '../../../lib/mail/message-view.js';

export interface FrameContent {
  srcdoc: string;
  /** Declarations of each element's style attribute, by the data-svc-style number put on it. */
  inline: string[];
  /** The text of the message's <style> elements, after the frame's own style. */
  sheet: string;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const MARK = 'data-svc-style';

/** The sanitized message as a frame document without inline style, and the style to apply after it loads. */
export function prepareFrame(body: { text: string; html: string | null }, remote: boolean): FrameContent {
  const inline: string[] = [];
  let sheet = MESSAGE_STYLE;
  let content = `<pre>${escapeHtml(body.text)}</pre>`;
  if (body.html !== null) {
    const doc = DOMPurify.sanitize(body.html, {
      WHOLE_DOCUMENT: false,
      RETURN_DOM_FRAGMENT: true,
      FORBID_TAGS: ['form', 'input', 'button', 'select', 'textarea', 'meta', 'link', 'base'],
      ADD_TAGS: ['style'],
    });
    for (const style of doc.querySelectorAll('style')) {
      sheet += `\n${style.textContent ?? ''}`;
      style.remove();
    }
    for (const el of doc.querySelectorAll('[style]')) {
      el.setAttribute(MARK, String(inline.push(el.getAttribute('style') ?? '') - 1));
      el.removeAttribute('style');
    }
    const holder = document.createElement('div');
    holder.append(doc);
    content = holder.innerHTML;
  }
  const policy = escapeHtml(messageDirectives(remote).join('; '));
  const srcdoc = `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${policy}"><base target="_blank"></head><body>${content}</body></html>`;
  return { srcdoc, inline, sheet };
}

/** Decrypted HTML to quote in a reply or forward: sanitized here (the server never saw it), without styles or forms. */
export function quotableHtml(html: string): string {
  return DOMPurify.sanitize(html, {
    FORBID_TAGS: ['form', 'input', 'button', 'select', 'textarea', 'meta', 'link', 'base', 'style'],
    FORBID_ATTR: ['style'],
  });
}

/** Applies the message's style inside the loaded frame (CSSOM: allowed where inline style is not). */
export function applyStyles(frame: HTMLIFrameElement, content: FrameContent): void {
  const doc = frame.contentDocument;
  const win = frame.contentWindow as (Window & typeof globalThis) | null;
  if (!doc || !win) return;
  const sheet = new win.CSSStyleSheet();
  sheet.replaceSync(content.sheet);
  doc.adoptedStyleSheets = [sheet];
  for (const el of doc.querySelectorAll<HTMLElement>(`[${MARK}]`)) {
    el.style.cssText = content.inline[Number(el.getAttribute(MARK))] ?? '';
    el.removeAttribute(MARK);
  }
}

/** Whether the message would load anything from elsewhere (the reader then offers to show it). */
export function loadsRemoteContent(html: string | null): boolean {
  return html !== null && /(?:src|href|background)\s*=\s*["']?\s*https?:|url\(\s*["']?\s*https?:/i.test(html);
}
