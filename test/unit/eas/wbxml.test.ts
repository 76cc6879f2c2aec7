// The ActiveSync WBXML codec: the MS-ASWBXML worked example byte for byte, every token of every
// code page both ways, the XML view and builders, and each malformed input with its reason.
import { describe, expect, it } from 'vitest';
import { CODE_PAGES, decode, el, encode, ns, opaque, text, toXml, WbxmlError } from '../../../lib/plugins/eas/wbxml/index.js';
import type { DecodeLimits, WbxmlElement, WbxmlErrorReason } from '../../../lib/plugins/eas/wbxml/index.js';

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const HEADER = [0x03, 0x01, 0x6a, 0x00];
const body = (...bytes: number[]) => Buffer.from([...HEADER, ...bytes]);
const ascii = (s: string) => [...Buffer.from(s, 'latin1')];

function reasonOf(input: Uint8Array, limits: Partial<DecodeLimits> = {}): WbxmlErrorReason {
  try {
    decode(input, limits);
  } catch (e) {
    expect(e).toBeInstanceOf(WbxmlError);
    return (e as WbxmlError).reason;
  }
  throw new Error('decoded without an error');
}

function encodeReason(tree: WbxmlElement): WbxmlErrorReason {
  try {
    encode(tree);
  } catch (e) {
    expect(e).toBeInstanceOf(WbxmlError);
    return (e as WbxmlError).reason;
  }
  throw new Error('encoded without an error');
}

describe('the MS-ASWBXML example (a Sync response adding a contact)', () => {
  // [MS-ASWBXML] section 4 shows this response and its encoding. The stored copy of the page we
  // read breaks off after "... 5E 03 46 75 6E 6B" (FileAs, "Funk"); the rest is the same encoding
  // carried on: ", Don", FirstName, LastName, SWITCH_PAGE 17, NativeBodyType, six ENDs.
  const specPrefix = hex(`03 01 6A 00 45 5C 4F 50 03 43 6F 6E 74 61 63 74 73 00 01 4B 03 32 00 01 52 03 32 00 01 4E 03 31 00 01
    56 47 4D 03 32 3A 31 00 01 5D 00 11 4A 46 03 31 00 01 4C 03 30 00 01 4D 03 31 00 01 01 00 01 5E 03 46 75 6E 6B`);
  const bytes = Buffer.concat([
    specPrefix,
    hex('2C 20 44 6F 6E 00 01 5F 03 44 6F 6E 00 01 69 03 46 75 6E 6B 00 01 00 11 56 03 31 00 01 01 01 01 01 01 01'),
  ]);
  const as = ns('AirSync');
  const asb = ns('AirSyncBase');
  const c = ns('Contacts');
  const tree = as('Sync', [
    as('Collections', [
      as('Collection', [
        as('Class', 'Contacts'),
        as('SyncKey', '2'),
        as('CollectionId', '2'),
        as('Status', '1'),
        as('Commands', [
          as('Add', [
            as('ServerId', '2:1'),
            as('ApplicationData', [
              asb('Body', [asb('Type', 1), asb('EstimatedDataSize', 0), asb('Truncated', 1)]),
              c('FileAs', 'Funk, Don'),
              c('FirstName', 'Don'),
              c('LastName', 'Funk'),
              asb('NativeBodyType', 1),
            ]),
          ]),
        ]),
      ]),
    ]),
  ]);
  const xml = `<Sync xmlns="AirSync:" xmlns:airsyncbase="AirSyncBase:" xmlns:contacts="Contacts:">
  <Collections>
    <Collection>
      <Class>Contacts</Class>
      <SyncKey>2</SyncKey>
      <CollectionId>2</CollectionId>
      <Status>1</Status>
      <Commands>
        <Add>
          <ServerId>2:1</ServerId>
          <ApplicationData>
            <airsyncbase:Body>
              <airsyncbase:Type>1</airsyncbase:Type>
              <airsyncbase:EstimatedDataSize>0</airsyncbase:EstimatedDataSize>
              <airsyncbase:Truncated>1</airsyncbase:Truncated>
            </airsyncbase:Body>
            <contacts:FileAs>Funk, Don</contacts:FileAs>
            <contacts:FirstName>Don</contacts:FirstName>
            <contacts:LastName>Funk</contacts:LastName>
            <airsyncbase:NativeBodyType>1</airsyncbase:NativeBodyType>
          </ApplicationData>
        </Add>
      </Commands>
    </Collection>
  </Collections>
</Sync>`;

  it('decodes to the tree and the XML of the example', () => {
    expect(decode(bytes)).toEqual(tree);
    expect(toXml(decode(bytes))).toBe(xml);
  });

  it('encodes the tree back byte for byte, switching pages only where the example does', () => {
    const out = encode(tree);
    expect(out.subarray(0, specPrefix.length)).toEqual(specPrefix);
    expect(out).toEqual(bytes);
  });
});

describe('the code pages', () => {
  it('has pages 0–25 with their namespaces', () => {
    expect(CODE_PAGES.map((p) => p.page)).toEqual([...Array(26).keys()]);
    expect(CODE_PAGES[0]!.namespace).toBe('AirSync:');
    expect(CODE_PAGES[17]!.namespace).toBe('AirSyncBase:');
    expect(CODE_PAGES[25]!.namespace).toBe('Find:');
  });

  it.each([
    ['AirSync', 'Sync', 0x05],
    ['AirSync', 'HeartbeatInterval', 0x29],
    ['Email', 'DisallowNewTimeProposal', 0x3f],
    ['Calendar', 'ClientUid', 0x3c],
    ['MeetingResponse', 'SendResponse', 0x12],
    ['Provision', 'AccountOnlyRemoteWipe', 0x3b],
    ['AirSyncBase', 'InstanceId', 0x2d],
    ['Settings', 'RightsManagementInformation', 0x2b],
    ['ComposeMail', 'Forwardees', 0x15],
    ['Email2', 'Send', 0x17],
    ['Find', 'Picture', 0x22],
  ] as const)('%s:%s is token 0x%s', (page, tag, token) => {
    expect(CODE_PAGES.find((p) => p.name === page)!.tokens.get(tag)).toBe(token);
  });

  // Every tag of every page, alone, as text, as opaque data and holding a child: the exact bytes,
  // and the tree back.
  for (const page of CODE_PAGES) {
    it(`round-trips every token of page ${page.page} (${page.name})`, () => {
      const sw = page.page === 0 ? [] : [0x00, page.page];
      for (const [token, tag] of page.tags) {
        expect(encode(el(page.name, tag))).toEqual(body(...sw, token));
        for (const content of ['x', '', Buffer.from([0, 1, 2])] as const) {
          const tree = el(page.name, tag, content);
          expect(decode(encode(tree))).toEqual(typeof content === 'string' ? text(page.name, tag, content) : tree);
        }
        const nested = el('AirSync', 'Sync', [el(page.name, tag, [el(page.name, tag, 'y')]), el('AirSync', 'Status', '1')]);
        expect(decode(encode(nested))).toEqual(nested);
      }
      const all = el(
        page.name,
        [...page.tags.values()][0]!,
        [...page.tags.values()].map((t) => el(page.name, t, t)),
      );
      expect(decode(encode(all))).toEqual(all);
    });
  }
});

describe('toXml and the builders', () => {
  it('escapes text, writes empty elements, declares each namespace once on the root', () => {
    const tree = el('FolderHierarchy', 'FolderSync', [
      el('FolderHierarchy', 'SyncKey', '<0> & "1"'),
      el('AirSync', 'GetChanges'),
      el('AirSync', 'Status', ''),
      el('AirSync', 'Options', []),
    ]);
    expect(toXml(tree, { indent: '' })).toBe(
      '<FolderSync xmlns="FolderHierarchy:" xmlns:airsync="AirSync:"><SyncKey>&lt;0&gt; &amp; "1"</SyncKey>' +
        '<airsync:GetChanges/><airsync:Status></airsync:Status><airsync:Options/></FolderSync>',
    );
  });

  it('shows opaque data as base64, or only its size for logs', () => {
    const tree = el('ComposeMail', 'SendMail', [opaque('ComposeMail', 'Mime', Buffer.from('Subject: hi\r\n\r\nbody'))]);
    expect(toXml(tree, { indent: '' })).toBe(
      '<SendMail xmlns="ComposeMail:"><Mime><!-- opaque, base64 -->U3ViamVjdDogaGkNCg0KYm9keQ==</Mime></SendMail>',
    );
    expect(toXml(tree, { indent: '', opaque: 'size' })).toBe(
      '<SendMail xmlns="ComposeMail:"><Mime><!-- opaque, 19 bytes --></Mime></SendMail>',
    );
  });

  it('uses the rm prefix for RightsManagement', () => {
    expect(toXml(el('AirSync', 'Sync', [el('RightsManagement', 'Owner', '1')]), { indent: '' })).toBe(
      '<Sync xmlns="AirSync:" xmlns:rm="RightsManagement:"><rm:Owner>1</rm:Owner></Sync>',
    );
  });

  it('builds elements from children, text, numbers and Buffers', () => {
    expect(el('AirSync', 'WindowSize', 100)).toEqual({ page: 'AirSync', tag: 'WindowSize', text: '100' });
    expect(el('AirSync', 'Sync', [])).toEqual({ page: 'AirSync', tag: 'Sync' });
    expect(el('ComposeMail', 'Mime', Buffer.from('x'))).toEqual({ page: 'ComposeMail', tag: 'Mime', opaque: Buffer.from('x') });
    expect(text('Ping', 'HeartbeatInterval', 480)).toEqual({ page: 'Ping', tag: 'HeartbeatInterval', text: '480' });
  });
});

describe('the encoder', () => {
  it('writes text as UTF-8 inline strings and long opaque lengths as multi-byte integers', () => {
    expect(encode(el('AirSync', 'SyncKey', 'é€'))).toEqual(body(0x4b, 0x03, 0xc3, 0xa9, 0xe2, 0x82, 0xac, 0x00, 0x01));
    const out = encode(el('ComposeMail', 'Mime', Buffer.alloc(300, 0x61)));
    expect(out.subarray(0, 10)).toEqual(body(0x00, 0x15, 0x50, 0xc3, 0x82, 0x2c));
    expect(decode(out).opaque).toEqual(Buffer.alloc(300, 0x61));
  });

  it.each<[string, WbxmlElement, WbxmlErrorReason]>([
    ['an unknown page', { page: 'Nope' as 'AirSync', tag: 'Sync' }, 'unknown-page'],
    ['a tag its page lacks', el('AirSync', 'Subject'), 'unknown-tag'],
    ['children and text', { page: 'AirSync', tag: 'Sync', text: 'x', children: [el('AirSync', 'Status')] }, 'mixed-content'],
    ['text and opaque data', { page: 'AirSync', tag: 'Sync', text: 'x', opaque: Buffer.alloc(1) }, 'mixed-content'],
    ['a NUL in text', el('AirSync', 'SyncKey', 'a\0b'), 'nul-in-string'],
  ])('refuses %s', (_what, tree, reason) => {
    expect(encodeReason(tree)).toBe(reason);
  });
});

describe('malformed input', () => {
  const deep = (n: number) => body(...Array<number>(n).fill(0x45), ...Array<number>(n).fill(0x01));

  it.each<[string, Buffer, WbxmlErrorReason]>([
    ['empty input', Buffer.alloc(0), 'truncated'],
    ['a header cut short', Buffer.from([0x03, 0x01, 0x6a]), 'truncated'],
    ['WBXML 1.2', Buffer.from([0x02, 0x01, 0x6a, 0x00, 0x05]), 'bad-version'],
    ['a public id in the string table', Buffer.from([0x03, 0x00, 0x00, 0x6a, 0x00, 0x05]), 'bad-public-id'],
    ['a public id other than unknown', Buffer.from([0x03, 0x02, 0x6a, 0x00, 0x05]), 'bad-public-id'],
    ['charset ISO-8859-1', Buffer.from([0x03, 0x01, 0x04, 0x00, 0x05]), 'bad-charset'],
    ['a string table', Buffer.from([0x03, 0x01, 0x6a, 0x02, 0x41, 0x00, 0x05]), 'string-table'],
    ['a 6-byte multi-byte integer', Buffer.from([0x03, 0x81, 0x80, 0x80, 0x80, 0x80, 0x01]), 'bad-mb-uint32'],
    ['a multi-byte integer above 2^32', Buffer.from([0x03, 0x01, 0x90, 0x80, 0x80, 0x80, 0x00]), 'bad-mb-uint32'],
    ['a multi-byte integer cut short', Buffer.from([0x03, 0x01, 0x83]), 'truncated'],
    ['an opaque length above 2^32', body(0x45, 0xc3, 0xff, 0xff, 0xff, 0xff, 0x7f), 'bad-mb-uint32'],
    ['SWITCH_PAGE to page 26', body(0x00, 26, 0x05), 'unknown-page'],
    ['SWITCH_PAGE cut short', body(0x00), 'truncated'],
    ['a token page 0 lacks', body(0x6a, 0x01), 'unknown-token'],
    ['a gap in the Find page (0x0F)', body(0x00, 25, 0x0f), 'unknown-token'],
    ['ENTITY', body(0x45, 0x02, 0x41, 0x01), 'unsupported-token'],
    ['LITERAL', body(0x04, 0x00), 'unsupported-token'],
    ['STR_T', body(0x45, 0x83, 0x00, 0x01), 'unsupported-token'],
    ['EXT_I_0', body(0x45, 0x40, 0x41, 0x00, 0x01), 'unsupported-token'],
    ['PI', body(0x43, 0x01), 'unsupported-token'],
    ['EXT_0', body(0x45, 0xc0, 0x01), 'unsupported-token'],
    ['LITERAL_AC', body(0xc4, 0x00), 'unsupported-token'],
    ['attributes', body(0xc5, 0x01, 0x01), 'attributes'],
    ['attributes without content', body(0x85, 0x01), 'attributes'],
    ['END before any element', body(0x01), 'unbalanced-end'],
    ['an END too many', body(0x45, 0x01, 0x01), 'trailing-bytes'],
    ['a second root', body(0x05, 0x05), 'trailing-bytes'],
    ['SWITCH_PAGE after the root', body(0x05, 0x00, 0x01), 'trailing-bytes'],
    ['a header without a body', body(), 'no-root'],
    ['only SWITCH_PAGE', body(0x00, 0x01), 'no-root'],
    ['an element never ended', body(0x45, 0x4b), 'truncated'],
    ['an element cut in its text', body(0x45, 0x4b, 0x03, 0x41), 'truncated'],
    ['opaque data cut short', body(0x45, 0xc3, 0x05, 0x41, 0x42), 'truncated'],
    ['text outside every element', body(0x03, 0x41, 0x00), 'content-outside-element'],
    ['opaque data outside every element', body(0xc3, 0x00), 'content-outside-element'],
    ['text then an element', body(0x45, 0x03, 0x41, 0x00, 0x0b, 0x01), 'mixed-content'],
    ['an element then text', body(0x45, 0x0b, 0x03, 0x41, 0x00, 0x01), 'mixed-content'],
    ['text then opaque data', body(0x45, 0x03, 0x41, 0x00, 0xc3, 0x00, 0x01), 'mixed-content'],
    ['opaque data then text', body(0x45, 0xc3, 0x00, 0x03, 0x41, 0x00, 0x01), 'mixed-content'],
    ['text that is not UTF-8', body(0x4b, 0x03, 0xc3, 0x28, 0x00, 0x01), 'bad-utf8'],
    ['65 levels of nesting', deep(65), 'too-deep'],
  ])('refuses %s', (_what, input, reason) => {
    expect(reasonOf(input)).toBe(reason);
  });

  it('takes 64 levels of nesting', () => {
    expect(() => decode(deep(64))).not.toThrow();
  });

  it('applies the limits given', () => {
    const sync = encode(el('AirSync', 'Sync', [el('AirSync', 'SyncKey', 'abcd'), el('AirSync', 'Status', '1')]));
    expect(reasonOf(sync, { maxInputBytes: sync.length - 1 })).toBe('too-large');
    expect(reasonOf(sync, { maxDepth: 1 })).toBe('too-deep');
    expect(reasonOf(sync, { maxElements: 2 })).toBe('too-many-elements');
    expect(reasonOf(sync, { maxStringBytes: 3 })).toBe('string-too-long');
    expect(() => decode(sync, { maxStringBytes: 4, maxElements: 3, maxDepth: 2, maxInputBytes: sync.length })).not.toThrow();
    const mime = encode(el('ComposeMail', 'Mime', Buffer.alloc(10)));
    expect(reasonOf(mime, { maxOpaqueBytes: 9 })).toBe('opaque-too-long');
  });

  it('counts the limit over all pieces of one element', () => {
    // Two inline strings in one element are one text; so are two opaque pieces.
    expect(decode(body(0x4b, 0x03, 0x61, 0x00, 0x03, 0x62, 0x00, 0x01))).toEqual(text('AirSync', 'SyncKey', 'ab'));
    expect(reasonOf(body(0x4b, 0x03, 0x61, 0x61, 0x00, 0x03, 0x62, 0x62, 0x00, 0x01), { maxStringBytes: 3 })).toBe('string-too-long');
    expect(decode(body(0x4b, 0xc3, 0x01, 0x61, 0xc3, 0x01, 0x62, 0x01)).opaque).toEqual(Buffer.from('ab'));
    expect(reasonOf(body(0x4b, 0xc3, 0x02, 0x61, 0x61, 0xc3, 0x02, 0x62, 0x62, 0x01), { maxOpaqueBytes: 3 })).toBe('opaque-too-long');
    // A character split across two inline strings is still one character.
    expect(decode(body(0x4b, 0x03, 0xc3, 0x00, 0x03, 0xa9, 0x00, 0x01)).text).toBe('é');
  });

  it('refuses a string without its NUL as too long once past the limit, without reading on', () => {
    const long = body(0x4b, 0x03, ...ascii('x'.repeat(100)));
    expect(reasonOf(long, { maxStringBytes: 10 })).toBe('string-too-long');
    expect(reasonOf(long)).toBe('truncated');
  });

  it('reports where in the input it failed', () => {
    try {
      decode(body(0x45, 0x6a));
    } catch (e) {
      expect((e as WbxmlError).offset).toBe(5);
      expect((e as WbxmlError).message).toContain('at byte 5');
    }
    expect.assertions(2);
  });

  it('keeps decoded opaque data apart from the input buffer', () => {
    const input = body(0x4b, 0xc3, 0x01, 0x61, 0x01);
    const tree = decode(input);
    input[7] = 0x62;
    expect(tree.opaque).toEqual(Buffer.from('a'));
  });
});
