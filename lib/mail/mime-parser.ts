import type * as Mailparser from 'mailparser';

let loading: Promise<typeof Mailparser> | undefined;

/**
 * mailparser, loaded at the first parse rather than with lib/mail: with its charset tables
 * (iconv-lite, encoding-japanese) and HTML-to-text converter it is some 5 MiB of heap that the push
 * and protocols daemons, which never parse a message, would otherwise carry (bench/memory.ts).
 */
export const mailparser = (): Promise<typeof Mailparser> => (loading ??= import('mailparser'));
