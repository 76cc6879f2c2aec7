import { createHash } from 'node:crypto';
import { z } from 'zod';
import { invalid } from '../errors/index.js';
import type { Deps } from '../context/index.js';
import { defineSingleton, type SingletonView } from './singleton.js';

// Spec: /api/system/branding — name, logo and colours served to the pages. Readable without
// sign-in (the sign-in and landing pages need it first), changed by an elevated administrator.

const hex = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^#(?:[0-9a-f]{3}|[0-9a-f]{6})$/, 'must be a hex colour such as #1f6feb or #fff');

/**
 * Raster images only: an SVG logo could carry script, and the pages would have to sanitize it. A
 * URL logo must be https (the pages are served over https; http would be mixed content).
 */
const DATA_URL = /^data:image\/(png|jpeg|gif|webp);base64,([A-Za-z0-9+/]+={0,2})$/;
const logo = z
  .string()
  .trim()
  .max(4 * 1024 * 1024)
  .refine(
    (v) => DATA_URL.test(v) || (/^https:\/\/[^\s"'<>]+$/.test(v) && v.length <= 2048),
    'must be a data:image/(png|jpeg|gif|webp);base64 URL or an https:// URL of at most 2048 characters',
  )
  .nullable()
  .default(null);

export const brandingFields = {
  /** Product name shown in titles and headers. */
  name: z
    .string()
    .trim()
    .min(1)
    .max(100)
    .regex(/^[^<>\r\n]*$/, 'must be plain text on one line')
    .default('svcmail'),
  logo,
  primaryColor: hex.default('#1f6feb'),
  accentColor: hex.default('#d97706'),
  backgroundColor: hex.default('#ffffff'),
  textColor: hex.default('#1f2328'),
};

/** Decoded size of a base64 data URL's payload. */
export function dataUrlBytes(url: string): number | null {
  const m = DATA_URL.exec(url);
  if (!m) return null;
  const b64 = m[2];
  return Math.floor((b64.length * 3) / 4) - (b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0);
}

export const branding = defineSingleton({
  name: 'branding',
  table: 'branding',
  fields: brandingFields,
  read: 'none',
  summary: 'Branding served to the pages: product name, logo, colours',
  description:
    'Public: the pages read it before sign-in. logo is a data:image/(png|jpeg|gif|webp);base64 URL of at most mail:branding:max_logo_bytes decoded bytes, or an https:// URL; colours are #rgb or #rrggbb.',
  check(value, ctx) {
    const bytes = value.logo ? dataUrlBytes(value.logo) : null;
    const max = ctx.config.get('mail:branding:max_logo_bytes');
    if (bytes !== null && bytes > max)
      throw invalid(`the logo is ${bytes} bytes; at most ${max} (mail:branding:max_logo_bytes)`, [
        { path: 'logo', message: `larger than ${max} bytes` },
      ]);
  },
  // The audit log keeps a data-URL logo as its digest, not hundreds of kilobytes twice per change.
  auditView: (v) => ({
    ...v,
    logo: v.logo?.startsWith('data:')
      ? `${v.logo.slice(0, v.logo.indexOf(','))} sha256:${createHash('sha256').update(v.logo).digest('hex')}`
      : v.logo,
  }),
});
export type Branding = SingletonView<typeof brandingFields>;

export function readBranding(deps: Pick<Deps, 'store'>): Promise<Branding> {
  return branding.read(deps);
}
