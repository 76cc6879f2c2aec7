// The one error the codec throws: malformed or over-limit input when decoding, a tree that cannot
// be written when encoding. `reason` is stable for callers and tests; the message is for people.

export type WbxmlErrorReason =
  /** The input is larger than maxInputBytes. */
  | 'too-large'
  /** The input ends inside the header, a token, a string, opaque data or an open element. */
  | 'truncated'
  /** The header's version byte is not 0x03 (WBXML 1.3). */
  | 'bad-version'
  /** The header's public id is not 0x01 (unknown), or it names one in the string table. */
  | 'bad-public-id'
  /** The header's charset is not 106 (UTF-8). */
  | 'bad-charset'
  /** The header announces a string table; ActiveSync never uses one. */
  | 'string-table'
  /** A multi-byte integer longer than 5 bytes or above 2^32 − 1. */
  | 'bad-mb-uint32'
  /** SWITCH_PAGE to a page that is not 0–25 (decoding), or an element of an unknown page (encoding). */
  | 'unknown-page'
  /** A tag token that its code page does not define. */
  | 'unknown-token'
  /** A tag name that its code page does not define (encoding). */
  | 'unknown-tag'
  /** A global token ActiveSync does not use: ENTITY, LITERAL*, EXT*, PI, STR_T. */
  | 'unsupported-token'
  /** A tag with the attribute bit (0x80): ActiveSync never sends attributes. */
  | 'attributes'
  /** END with no open element. */
  | 'unbalanced-end'
  /** Bytes after the root element's end. */
  | 'trailing-bytes'
  /** A body without a root element. */
  | 'no-root'
  /** Text or opaque data outside every element. */
  | 'content-outside-element'
  /** An element with both child elements and text or opaque data, or both text and opaque data. */
  | 'mixed-content'
  /** Elements nested deeper than maxDepth. */
  | 'too-deep'
  /** More elements than maxElements. */
  | 'too-many-elements'
  /** An inline string longer than maxStringBytes. */
  | 'string-too-long'
  /** Opaque data longer than maxOpaqueBytes. */
  | 'opaque-too-long'
  /** An inline string that is not valid UTF-8. */
  | 'bad-utf8'
  /** Text to encode that holds a NUL character, which ends an inline string. */
  | 'nul-in-string';

export class WbxmlError extends Error {
  override readonly name = 'WbxmlError';

  /**
   * @param reason what went wrong, one of a fixed list
   * @param message what went wrong, for people
   * @param offset where in the input (decoding), when it is known
   */
  constructor(
    readonly reason: WbxmlErrorReason,
    message: string,
    readonly offset?: number,
  ) {
    super(offset === undefined ? message : `${message} (at byte ${offset})`);
  }
}
