import { useEffect, useState } from 'react';
import { api } from '../shared/api.js';
import { ErrorBox } from '../shared/ErrorBox.js';

type Branding = Record<string, string | null> & { version?: number };

const FIELDS: Array<[key: string, label: string, type: 'text' | 'color']> = [
  ['name', 'Product name', 'text'],
  ['logo', 'Logo (https:// or data:image URL)', 'text'],
  ['primaryColor', 'Primary colour', 'color'],
  ['accentColor', 'Accent colour', 'color'],
  ['backgroundColor', 'Background', 'color'],
  ['textColor', 'Text colour', 'color'],
];
/** #abc as #aabbcc: what a colour input takes. */
const long = (c: string | null | undefined) =>
  c && /^#[0-9a-f]{3}$/i.test(c) ? `#${[...c.slice(1)].map((x) => x + x).join('')}` : (c ?? '');

/** The header of the pages as it will look with these values. */
function Preview({ b }: { b: Branding }) {
  return (
    <figure className="brand-preview" style={{ background: b.backgroundColor ?? undefined, color: b.textColor ?? undefined }}>
      <figcaption className="muted">Preview</figcaption>
      <div className="brand" style={{ background: b.primaryColor ?? undefined }}>
        {b.logo && <img className="brand-logo" src={b.logo} alt="" />}
        <span className="brand-name">{b.name || 'svcmail'}</span>
      </div>
      <p>
        Text on the page, and a{' '}
        <button type="button" tabIndex={-1} style={{ background: b.primaryColor ?? undefined }}>
          button
        </button>{' '}
        with an <span style={{ outline: `2px solid ${b.accentColor ?? '#d97706'}` }}>accent</span>.
      </p>
    </figure>
  );
}

/** Name, logo and colours of every page, with a live preview; saved for everyone at once (audited). */
export default function BrandingView() {
  const [brand, setBrand] = useState<Branding | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [told, setTold] = useState('');
  useEffect(() => {
    api<Branding>('/api/system/branding').then(setBrand, setError);
  }, []);
  if (!brand) return <ErrorBox error={error} />;
  const save = async () => {
    setError(null);
    const body = Object.fromEntries(FIELDS.map(([k]) => [k, brand[k] === '' && k === 'logo' ? null : brand[k]]));
    try {
      setBrand(
        await api<Branding>('/api/system/branding', {
          method: 'PUT',
          body: { ...body, version: brand.version },
          label: 'Change the branding',
        }),
      );
      setTold('Saved: the pages show it from their next load.');
    } catch (e) {
      setError(e);
    }
  };
  return (
    <div className="branding">
      <form
        className="stack"
        aria-label="Branding"
        onSubmit={(e) => {
          e.preventDefault();
          void save();
        }}
      >
        <ErrorBox error={error} />
        {FIELDS.map(([k, label, type]) => (
          <label key={k}>
            {label}{' '}
            <input
              type={type}
              value={type === 'color' ? long(brand[k]) : (brand[k] ?? '')}
              onChange={(e) => setBrand({ ...brand, [k]: e.target.value })}
            />
          </label>
        ))}
        <span>
          <button type="submit">Save branding</button> <span role="status">{told}</span>
        </span>
      </form>
      <Preview b={brand} />
    </div>
  );
}
