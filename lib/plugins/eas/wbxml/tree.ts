import type { PageName } from './codepages.js';

/**
 * One element of an ActiveSync document: its code page (namespace) and tag name, and at most one
 * kind of content — child elements, text (an inline string) or opaque bytes (MIME data, ids).
 * None of the three is an empty element (`<Tag/>`). ActiveSync has no attributes and no mixed content.
 */
export interface WbxmlElement {
  page: PageName;
  tag: string;
  children?: WbxmlElement[];
  text?: string;
  opaque?: Buffer;
}

/** The WBXML global tokens (WAP-192 section 7.1). */
export const TOKEN = {
  SWITCH_PAGE: 0x00,
  END: 0x01,
  STR_I: 0x03,
  OPAQUE: 0xc3,
} as const;

/** The tag byte's bits: the token in the low six, "has content" and "has attributes" above. */
export const TAG_CONTENT = 0x40;
export const TAG_ATTRIBUTES = 0x80;
export const TAG_TOKEN_MASK = 0x3f;

/** The header the codec writes and accepts: WBXML 1.3, unknown public id, UTF-8, no string table. */
export const HEADER = { version: 0x03, publicId: 0x01, charset: 106, stringTableLength: 0 } as const;
