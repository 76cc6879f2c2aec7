import escapeHtml from 'escape-html';

// A message as a document of its own, for a page's sandboxed frame: the sanitized HTML (or the
// text) under a policy of its own. Whatever the sanitizer let through, the document runs no script
// (CSP sandbox without allow-scripts; the frame's sandbox attribute says the same), submits no
// form and loads nothing from elsewhere — no remote image, stylesheet image or font, which would
// tell the sender the message was opened — unless the reader allowed remote content for it. Links
// open in a new tab, without a referrer (the service's Referrer-Policy).

export interface MessageView {
  html: string;
  policy: string;
}

/** The document's own style (shared with the frame the browser fills for a message it decrypted). */
export const MESSAGE_STYLE =
  'body{margin:0;padding:0.8rem;font:15px/1.45 system-ui,sans-serif;overflow-wrap:anywhere}pre{white-space:pre-wrap;font:inherit;margin:0}img{max-width:100%;height:auto}';

/** The directives of a message document's policy that a meta element can carry too; `remote`: remote images and fonts allowed. */
export function messageDirectives(remote: boolean): string[] {
  const far = remote ? ' https: http:' : '';
  return [
    "default-src 'none'",
    `img-src data:${far}`,
    "style-src 'unsafe-inline'",
    `font-src data:${far}`,
    "form-action 'none'",
    "base-uri 'none'",
  ];
}

const documentOf = (content: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><base target="_blank"><style>${MESSAGE_STYLE}</style></head><body>${content}</body></html>`;

/** The document and its Content-Security-Policy; `remote`: the reader allowed remote images and fonts. */
export function messageView(body: { encrypted: boolean; text: string | null; html: string | null }, remote: boolean): MessageView {
  let content: string;
  if (body.encrypted) content = '<p>This message is encrypted end to end. Open it in a client that holds your key.</p>';
  else if (body.html !== null) content = body.html;
  else content = `<pre>${escapeHtml(body.text ?? '')}</pre>`;
  const policy = [...messageDirectives(remote), "frame-ancestors 'self'", 'sandbox allow-popups allow-popups-to-escape-sandbox'].join('; ');
  return { html: documentOf(content), policy };
}
