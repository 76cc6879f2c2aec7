// Pictures a message carries (cid:) written into its HTML for the web app's frame
// (lib/mail/inline-images.ts): raster images only, matched by Content-ID case-insensitively, each
// and all within the size budget; other references stay as they were.
import { describe, expect, it } from 'vitest';
import { inlineCidImages } from '../../../lib/mail/inline-images.js';

const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

describe('inlineCidImages', () => {
  it('replaces a cid: source by the part with that Content-ID as a data: URL', () => {
    const html = '<p>Logo <img src="cid:Logo@X" alt="logo" /> and <img alt="b" src="cid:missing@x" /></p>';
    const out = inlineCidImages(html, [{ cid: '<logo@x>', contentType: 'image/PNG', content: png }]);
    expect(out).toBe(
      `<p>Logo <img src="data:image/png;base64,${png.toString('base64')}" alt="logo" /> and <img alt="b" src="cid:missing@x" /></p>`,
    );
  });

  it('leaves SVG and other types, a part over 2 MiB, and anything past the 8 MiB budget', () => {
    const big = Buffer.alloc(2 * 1024 * 1024 + 1);
    const parts = [
      { cid: 'svg@x', contentType: 'image/svg+xml', content: Buffer.from('<svg/>') },
      { cid: 'big@x', contentType: 'image/png', content: big },
      { cid: 'doc@x', contentType: 'application/pdf', content: png },
    ];
    const html = '<img src="cid:svg@x" /><img src="cid:big@x" /><img src="cid:doc@x" />';
    expect(inlineCidImages(html, parts)).toBe(html);
    const two = Buffer.alloc(2 * 1024 * 1024);
    const many = Array.from({ length: 5 }, (_, i) => ({ cid: `p${i}@x`, contentType: 'image/jpeg', content: two }));
    const out = inlineCidImages(many.map((p) => `<img src="cid:${p.cid}" />`).join(''), many);
    expect(out.match(/data:image\/jpeg/g)).toHaveLength(4);
    expect(out).toContain('src="cid:p4@x"');
  });

  it('a malformed percent-escape in the reference is left alone', () => {
    expect(inlineCidImages('<img src="cid:%E0%A4%A" />', [{ cid: 'x', contentType: 'image/png', content: png }])).toBe(
      '<img src="cid:%E0%A4%A" />',
    );
  });
});
