import { useEffect, useState } from 'react';
import { api } from '../shared/api.js';
import { applyAppearance, readAppearance, type Appearance as Look } from '../shared/appearance.js';
import { Section } from '../shared/Section.js';

/** Theme (as the system, light or dark), density and the conversation list; applied at once and kept for the mailbox. */
export function Appearance({ mailboxUid }: { mailboxUid: string }) {
  const [look, setLook] = useState<Look | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [saving, setSaving] = useState(false);
  useEffect(() => {
    void readAppearance(mailboxUid).then(setLook, setError);
  }, [mailboxUid]);
  if (!look)
    return (
      <Section id="appearance" title="Appearance" error={error}>
        {null}
      </Section>
    );
  const set = (patch: Partial<Look>) => {
    const next = { ...look, ...patch };
    applyAppearance(next);
    setError(null);
    const save = look.uid
      ? api<Look>(`/api/mail/preferences/appearance/${encodeURIComponent(look.uid)}`, {
          method: 'PUT',
          body: { ...patch, version: look.version },
        })
      : api<Look>('/api/mail/preferences/appearance', {
          method: 'POST',
          body: { mailboxUid, theme: next.theme, density: next.density, conversationView: next.conversationView },
        });
    // Shown at once; the stored record (its new version) replaces it, a refusal puts the old one back.
    setLook(next);
    setSaving(true);
    void save
      .then(setLook, (e) => {
        setLook(look);
        applyAppearance(look);
        setError(e);
      })
      .finally(() => setSaving(false));
  };
  const radios = <K extends 'theme' | 'density'>(key: K, legend: string, options: Array<[Look[K], string]>) => (
    <fieldset disabled={saving}>
      <legend>{legend}</legend>
      {options.map(([value, label]) => (
        <label key={value} className="inline">
          <input type="radio" name={key} checked={look[key] === value} onChange={() => set({ [key]: value })} /> {label}
        </label>
      ))}
    </fieldset>
  );
  return (
    <Section id="appearance" title="Appearance" error={error}>
      {radios('theme', 'Theme', [
        ['system', 'As the system'],
        ['light', 'Light'],
        ['dark', 'Dark'],
      ])}
      {radios('density', 'Density', [
        ['comfortable', 'Comfortable'],
        ['compact', 'Compact'],
      ])}
      <label>
        <input
          type="checkbox"
          disabled={saving}
          checked={look.conversationView}
          onChange={(e) => set({ conversationView: e.target.checked })}
        />{' '}
        Group messages by conversation
      </label>
    </Section>
  );
}
