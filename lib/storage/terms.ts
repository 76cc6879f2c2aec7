// What both adapters mean by a word and by a value: the words of a full-text query and document,
// and the values of a value index (ModelDef.valueIndexes) as they are stored and looked up.

/** The words of a free-text query (letters and digits only: nothing reaches the query syntax). */
export function queryWords(text: string): string[] {
  return [...new Set((text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).slice(0, 16))];
}

/** A document's text with everything but letters and digits made a space: words exactly as queries split them. */
export const documentText = (raw: string): string => raw.replace(/[^\p{L}\p{N}]+/gu, ' ');

/** Longer values are cut (a B-tree entry has a size limit); a query value is cut the same way. */
const MAX_VALUE = 400;

/** A value-index value as stored and as looked up: no NUL, at most MAX_VALUE characters. */
export function cleanValue(v: string): string {
  let s = v.replace(/\0/g, '');
  if (s.length > MAX_VALUE) s = s.slice(0, MAX_VALUE).replace(/[\uD800-\uDBFF]$/, '');
  return s;
}

/** The smallest string above every string that starts with p (code point order, which is UTF-8 byte order), or null. */
export function above(p: string): string | null {
  const cps = Array.from(p);
  while (cps.length) {
    let last = cps.pop()!.codePointAt(0)! + 1;
    if (last >= 0xd800 && last <= 0xdfff) last = 0xe000;
    if (last <= 0x10ffff) return cps.join('') + String.fromCodePoint(last);
  }
  return null;
}
