import type * as Mailsplit from '@zone-eu/mailsplit';
import type FlowedDecoder from '@zone-eu/mailsplit/lib/flowed-decoder.js';
import type Libmime from 'libmime';
import type * as Mailparser from 'mailparser';

let loading: Promise<typeof Mailparser> | undefined;

/**
 * mailparser, loaded at the first parse rather than with lib/mail: with its charset tables
 * (iconv-lite, encoding-japanese) and HTML-to-text converter it is some 5 MiB of heap that the push
 * and protocols daemons, which never parse a message, would otherwise carry (bench/memory.ts).
 */
export const mailparser = (): Promise<typeof Mailparser> => (loading ??= import('mailparser'));

export interface BodyReaders {
  Splitter: typeof Mailsplit.Splitter;
  FlowedDecoder: typeof FlowedDecoder;
  libmime: typeof Libmime;
}
let readers: Promise<BodyReaders> | undefined;

/** What lib/mail/display-body.ts reads bodies with (mailsplit, libmime and its charset tables), loaded likewise at first use. */
export const bodyReaders = (): Promise<BodyReaders> =>
  (readers ??= Promise.all([import('@zone-eu/mailsplit'), import('@zone-eu/mailsplit/lib/flowed-decoder.js'), import('libmime')]).then(
    ([split, flowed, mime]) => ({ Splitter: split.Splitter, FlowedDecoder: flowed.default, libmime: mime.default }),
  ));
