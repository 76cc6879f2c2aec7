// A DOM builder for the small pages (settings, admin, escrow) that only ever sets text, never HTML
// from the server, and the page runner that shows an error instead of a blank page.
import { describeError } from './api.js';

type Attrs = Record<string, string | number | boolean | null | undefined | ((e: Event) => void)>;
type Child = Node | string | number | null | undefined | false | Child[];

/** h('li', { class: 'x', onclick }, 'text', child): text children become text nodes. */
export function h(tag: string, attrs: Attrs = {}, ...children: Child[]): HTMLElement {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  const add = (c: Child): void => {
    if (Array.isArray(c)) c.forEach(add);
    else if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  };
  children.forEach(add);
  return el;
}

export const root = (): HTMLElement => document.getElementById('app')!;

export function showError(e: unknown, where: HTMLElement = root()): void {
  where.prepend(h('div', { class: 'error', role: 'alert' }, describeError(e)));
}

/** Runs a page: its start function gets the app element; an error is shown instead of a blank page. */
export function start(fn: (el: HTMLElement) => Promise<void>): void {
  const run = async () => {
    const el = root();
    el.replaceChildren(h('p', { class: 'muted' }, 'Loading…'));
    try {
      await fn(el);
    } catch (e) {
      el.replaceChildren();
      showError(e, el);
    }
  };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', () => void run());
  else void run();
}
