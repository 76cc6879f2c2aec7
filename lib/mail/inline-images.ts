// Pictures a message carries inside itself (multipart/related parts named by Content-ID, shown by
// <img src="cid:…">): for a reader whose frame may load nothing from the server (a sandboxed frame
// sends no cookie), each is written into the HTML as a data: URL — raster images only, within a
// size budget; a reference to anything else is left as it is (and shows nothing).

const IMAGE = /^image\/(png|jpeg|gif|webp|bmp|avif)$/i;
/** One picture at most, and all of one message at most (base64 grows them by a third). */
const MAX_PART = 2 * 1024 * 1024;
const MAX_TOTAL = 8 * 1024 * 1024;

export interface InlinePart {
  cid?: string;
  contentType: string;
  content: Buffer;
}

/** The sanitized HTML with its cid: image sources replaced by data: URLs of the message's own parts. */
export function inlineCidImages(html: string, parts: readonly InlinePart[]): string {
  const byCid = new Map<string, InlinePart>();
  for (const p of parts)
    if (p.cid && IMAGE.test(p.contentType) && p.content.length <= MAX_PART) byCid.set(p.cid.replace(/^<|>$/g, '').toLowerCase(), p);
  if (!byCid.size) return html;
  let budget = MAX_TOTAL;
  return html.replace(/(<img\b[^>]*?\ssrc=")cid:([^"]*)"/gi, (whole, head: string, id: string) => {
    let key: string;
    try {
      key = decodeURIComponent(id).toLowerCase();
    } catch {
      return whole;
    }
    const part = byCid.get(key);
    if (!part || part.content.length > budget) return whole;
    budget -= part.content.length;
    return `${head}data:${part.contentType.toLowerCase()};base64,${part.content.toString('base64')}"`;
  });
}
