// The escrow console's message handling without the DOM (web/src/escrow/escrow-crypto.ts): mboxrd
// unquoting matches lib/mail's for any message (fast-check), and a single-part body is made readable
// from base64 and quoted-printable; a multipart entity is shown as it is.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mboxrdQuote, mboxrdUnquote as serverUnquote } from '../../../lib/mail/index.js';
import { mboxrdUnquote, readable } from '../../../web/src/escrow/escrow-crypto.js';

describe('escrow console: mboxrd and readable bodies', () => {
  it('unquotes exactly what the export quoted, as the server does', () => {
    const line = fc.oneof(fc.constantFrom('From here', '>From there', '>>From x', 'From', '> From', ''), fc.string({ maxLength: 20 }));
    fc.assert(
      fc.property(fc.array(line, { maxLength: 12 }), (lines) => {
        const raw = Buffer.from(lines.join('\n'));
        const quoted = mboxrdQuote(raw);
        expect(Buffer.from(mboxrdUnquote(quoted))).toEqual(raw);
        expect(Buffer.from(mboxrdUnquote(quoted))).toEqual(serverUnquote(quoted));
      }),
    );
  });

  it('decodes base64 and quoted-printable text; leaves multipart as it is', () => {
    expect(readable('Content-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\nR3LDvMOfZSBhdXMgS8O2bG4=\r\n')).toBe(
      'Grüße aus Köln',
    );
    expect(readable('Content-Transfer-Encoding: quoted-printable\r\n\r\nCaf=C3=A9 =\r\nau lait')).toBe('Café au lait');
    expect(readable('Content-Type: text/plain\r\n\r\nplain words')).toBe('plain words');
    const multi = 'Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n\r\nx\r\n--b--';
    expect(readable(multi)).toBe(multi);
  });
});
