// How the pages look for a mailbox (its preferences/appearance record): theme (system, light, dark)
// and density, set on the root element where the stylesheet reads them.
import { api } from './api.js';

export interface Appearance {
  uid?: string;
  version?: number;
  theme: 'system' | 'light' | 'dark';
  density: 'comfortable' | 'compact';
  /** The message list shows one row per conversation. */
  conversationView: boolean;
}

export const DEFAULT_APPEARANCE: Appearance = { theme: 'system', density: 'comfortable', conversationView: true };

/** Sets theme and density on the page. */
export function applyAppearance(a: Pick<Appearance, 'theme' | 'density'>): void {
  document.documentElement.dataset.theme = a.theme;
  document.documentElement.dataset.density = a.density;
}

/** The mailbox's appearance record, or the defaults when it has none. */
export async function readAppearance(mailboxUid: string): Promise<Appearance> {
  const [found] = await api<Appearance[]>(`/api/mail/preferences/appearance?mailboxUid=${encodeURIComponent(mailboxUid)}&limit=1`);
  return found ?? DEFAULT_APPEARANCE;
}

/** Whether rows are drawn compact (the message list's row height follows). */
export const isCompact = (): boolean => document.documentElement.dataset.density === 'compact';
