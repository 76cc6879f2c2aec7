// The ActiveSync WBXML codec (MS-ASWBXML): bytes ⇄ element trees, trees → readable XML, and
// builders for trees. Standalone: it imports nothing from the rest of the product.
export { CODE_PAGES, isPageName, pageByName, pageByNumber } from './codepages.js';
export type { CodePage, PageName } from './codepages.js';
export { decode, DEFAULT_DECODE_LIMITS } from './decode.js';
export type { DecodeLimits } from './decode.js';
export { encode } from './encode.js';
export { WbxmlError } from './errors.js';
export type { WbxmlErrorReason } from './errors.js';
export type { WbxmlElement } from './tree.js';
export { el, ns, opaque, text, toXml } from './xml.js';
export type { ElementContent, XmlOptions } from './xml.js';
