// Whether a sanitized HTML body would load anything from elsewhere (an image, a stylesheet image or
// a font): the reading pane then offers to show it. The sanitizer writes attributes double-quoted.

const REMOTE_IMAGE = /<img\b[^>]*\ssrc="\s*https?:/i;
const REMOTE_URL = /url\(\s*(?:&quot;|["'])?\s*https?:/i;

export const loadsRemote = (html: string | null): boolean => html !== null && (REMOTE_IMAGE.test(html) || REMOTE_URL.test(html));
