// Properties of the WBXML codec over generated input: any tree round-trips, and any byte string
// — random, or a valid document with bytes changed — decodes or fails with a WbxmlError, quickly.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CODE_PAGES, decode, encode, WbxmlError } from '../../../lib/plugins/eas/wbxml/index.js';
import type { WbxmlElement } from '../../../lib/plugins/eas/wbxml/index.js';

const TAGS = CODE_PAGES.flatMap((p) => [...p.tags.values()].map((tag) => ({ page: p.name, tag })));

const tagArb = fc.constantFrom(...TAGS);
// Text as ActiveSync carries it: any well-formed Unicode (what survives UTF-8) but NUL, which ends
// an inline string.
const textArb = fc
  .string({ unit: 'binary', maxLength: 40 })
  .filter((s) => !s.includes('\0') && Buffer.from(s, 'utf8').toString('utf8') === s);
const opaqueArb = fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a));

const treeArb: fc.Arbitrary<WbxmlElement> = fc.letrec<{ el: WbxmlElement }>((tie) => ({
  el: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    tagArb,
    fc.tuple(tagArb, textArb).map(([t, text]) => ({ ...t, text })),
    fc.tuple(tagArb, opaqueArb).map(([t, opaque]) => ({ ...t, opaque })),
    fc.tuple(tagArb, fc.array(tie('el'), { minLength: 1, maxLength: 5 })).map(([t, children]) => ({ ...t, children })),
  ),
})).el;

/** Decodes, and says how it ended: 'ok' or the reason; anything but a WbxmlError fails the property. */
function outcome(input: Uint8Array): string {
  try {
    decode(input);
    return 'ok';
  } catch (e) {
    if (!(e instanceof WbxmlError)) throw e;
    return e.reason;
  }
}

describe('WBXML properties', () => {
  it('any tree encodes and decodes to itself', () => {
    fc.assert(
      fc.property(treeArb, (tree) => {
        expect(decode(encode(tree))).toEqual(tree);
      }),
      { numRuns: 500 },
    );
  });

  it('re-encoding a decoded document gives the same bytes', () => {
    fc.assert(
      fc.property(treeArb, (tree) => {
        const bytes = encode(tree);
        expect(encode(decode(bytes))).toEqual(bytes);
      }),
      { numRuns: 200 },
    );
  });

  it('random bytes never throw anything but WbxmlError', () => {
    const header = fc.constantFrom([], [0x03], [0x03, 0x01, 0x6a, 0x00]);
    fc.assert(
      fc.property(header, fc.uint8Array({ maxLength: 400 }), (h, rest) => {
        outcome(Buffer.concat([Buffer.from(h), rest]));
      }),
      { numRuns: 3000 },
    );
  });

  it('valid documents with bytes changed, cut or inserted never throw anything but WbxmlError', () => {
    const edit = fc.record({
      at: fc.nat(),
      byte: fc.integer({ min: 0, max: 255 }),
      kind: fc.constantFrom('set', 'cut', 'insert', 'truncate'),
    });
    fc.assert(
      fc.property(treeArb, fc.array(edit, { minLength: 1, maxLength: 4 }), (tree, edits) => {
        let bytes = [...encode(tree)];
        for (const { at, byte, kind } of edits) {
          const i = at % (bytes.length + 1);
          if (kind === 'set') bytes[Math.min(i, bytes.length - 1)] = byte;
          else if (kind === 'cut') bytes.splice(i, 1);
          else if (kind === 'insert') bytes.splice(i, 0, byte);
          else bytes = bytes.slice(0, i);
        }
        outcome(Buffer.from(bytes));
      }),
      { numRuns: 2000 },
    );
  });

  it('stays linear on hostile input: long runs of page switches, nesting, unterminated strings, huge lengths', () => {
    const H = [0x03, 0x01, 0x6a, 0x00];
    const n = 4 * 1024 * 1024;
    const cases: [Buffer, string][] = [
      [Buffer.concat([Buffer.from(H), Buffer.alloc(n, 0x00)]), 'no-root'], // SWITCH_PAGE 0, again and again
      [Buffer.concat([Buffer.from([...H, 0x45, 0x4b, 0x03]), Buffer.alloc(n, 0x41)]), 'truncated'],
      [Buffer.concat([Buffer.from([...H, 0x45, 0x4b, 0xc3, 0x8f, 0xff, 0xff, 0xff, 0x7f]), Buffer.alloc(16)]), 'opaque-too-long'],
      [Buffer.concat([Buffer.from([...H, 0x45, 0x4b, 0xc3, 0x80, 0x80, 0x40]), Buffer.alloc(16)]), 'truncated'], // 1 MiB announced
      [Buffer.concat([Buffer.from(H), Buffer.alloc(n, 0x45)]), 'too-deep'],
      [Buffer.concat([Buffer.from([...H, 0x45]), Buffer.alloc(n, 0x0d), Buffer.from([0x01])]), 'too-many-elements'],
    ];
    for (const [input, reason] of cases) {
      const started = performance.now();
      expect(outcome(input)).toBe(reason);
      expect(performance.now() - started).toBeLessThan(3000);
    }
  });
});
