// docs/SECURITY.md, Attachment names and other sender-chosen strings: safeFilename, on any string a
// sender can put in a filename parameter, gives a name that is safe to show and to save under:
// never a path, never a control, format or bidi character, never a Windows device name, never
// empty, never over the length limit; applied twice it changes nothing, and a name that is already
// plain stays as it is.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SAFE_NAME_MAX_BYTES, safeFilename } from '../../../lib/mail/attachment-names.js';

const RESERVED = /^(con|prn|aux|nul|clock\$|conin\$|conout\$|com[0-9¹²³]|lpt[0-9¹²³])$/i;
const BIDI = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/u;

/** Every property the safe name must have; the list of those it breaks. */
function broken(safe: string): string[] {
  const out: string[] = [];
  if (!safe) out.push('empty');
  if (/[/\\]/.test(safe)) out.push('path separator');
  if (/\p{Cc}/u.test(safe)) out.push('control character');
  if (/\p{Cf}/u.test(safe)) out.push('format character');
  if (BIDI.test(safe)) out.push('bidi control');
  if (/[<>:"|?*]/.test(safe)) out.push('character Windows refuses');
  if (RESERVED.test(safe.split('.')[0].trimEnd())) out.push('Windows device name');
  if (/^[.\s]/u.test(safe)) out.push('leading dot or space');
  if (/[.\s]$/u.test(safe)) out.push('trailing dot or space');
  if (/\s{2}|[\t\n\r]/u.test(safe)) out.push('uncollapsed whitespace');
  if (Buffer.byteLength(safe) > SAFE_NAME_MAX_BYTES) out.push('too long');
  if (/[\uD800-\uDFFF]/.test(safe.replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g, ''))) out.push('lone surrogate');
  return out;
}

/** Pieces senders use to attack a name, mixed with ordinary text. */
const piece = fc.oneof(
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }), weight: 4 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 12 }), weight: 2 },
  {
    arbitrary: fc.constantFrom(
      '/',
      '\\',
      '..',
      '.',
      ' ',
      '\t',
      '\r\n',
      '\0',
      '\x7f',
      '\u0085',
      '\u202e',
      '\u202d',
      '\u2066',
      '\u2069',
      '\u200f',
      '\u061c',
      '\ufeff',
      '\u200b',
      '\u2028',
      '\u00a0',
      '\uff0f',
      '\u2215',
      ':',
      '*',
      '?',
      '"',
      '<',
      '>',
      '|',
      '\ud800',
      '\udc00',
    ),
    weight: 3,
  },
  {
    arbitrary: fc.constantFrom('CON', 'con', 'PRN', 'aux', 'NUL', 'COM1', 'com9', 'LPT1', 'lpt¹', 'COM²', 'CONIN$', 'conout$', 'CLOCK$'),
    weight: 2,
  },
  { arbitrary: fc.constantFrom('.txt', '.tar.gz', '.exe', '.pdf', '.html', 'evil', 'etc', 'passwd'), weight: 2 },
  { arbitrary: fc.string({ minLength: 100, maxLength: 300 }), weight: 1 },
);
const name = fc.array(piece, { maxLength: 8 }).map((p) => p.join(''));

describe('safeFilename', () => {
  it('is safe for any name a sender writes, and idempotent', () => {
    fc.assert(
      fc.property(name, (n) => {
        const safe = safeFilename(n);
        expect(broken(safe), JSON.stringify({ n, safe })).toEqual([]);
        expect(safeFilename(safe)).toBe(safe);
      }),
      { numRuns: 3000 },
    );
  });

  it('is safe with any fallback, even an unsafe one', () => {
    fc.assert(
      fc.property(name, name, (n, fallback) => {
        expect(broken(safeFilename(n, fallback))).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });

  it('keeps plain names as they are', () => {
    const plain = fc
      .stringMatching(/^[A-Za-z0-9][A-Za-z0-9 _()-]{0,40}[A-Za-z0-9]\.(pdf|txt|docx|png)$/)
      .filter((n) => !/ {2}/.test(n) && !RESERVED.test(n.split('.')[0]));
    fc.assert(
      fc.property(plain, (n) => {
        expect(safeFilename(n)).toBe(n);
      }),
    );
    for (const n of ['report.pdf', 'Ünïcødé résumé.pdf', '報告書.xlsx', 'photo (1).jpg', 'a.tar.gz']) expect(safeFilename(n)).toBe(n);
  });

  it('handles the known attacks', () => {
    expect(safeFilename('../../../etc/evil.html')).toBe('evil.html');
    expect(safeFilename('..\\..\\Windows\\System32\\evil.dll')).toBe('evil.dll');
    expect(safeFilename('evil.html/..')).toBe('evil.html');
    expect(safeFilename('invoice\u202Efdp.exe')).toBe('invoicefdp.exe');
    expect(safeFilename('CON.txt')).toBe('_CON.txt');
    expect(safeFilename('nul')).toBe('_nul');
    expect(safeFilename('lpt1 .doc')).toBe('_lpt1 .doc');
    expect(safeFilename('.bashrc')).toBe('bashrc');
    expect(safeFilename('report.pdf. . ')).toBe('report.pdf');
    expect(safeFilename('a\r\nContent-Type: text.txt')).toBe('a Content-Type_ text.txt');
    expect(safeFilename('..', 'attachment-2')).toBe('attachment-2');
    expect(safeFilename('', 'attachment-1')).toBe('attachment-1');
    expect(safeFilename(undefined)).toBe('attachment');
    const long = safeFilename(`${'x'.repeat(400)}.pdf`);
    expect(long.endsWith('.pdf')).toBe(true);
    expect(Buffer.byteLength(long)).toBe(SAFE_NAME_MAX_BYTES);
  });
});
