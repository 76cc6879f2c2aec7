import sanitizeHtml from 'sanitize-html';

// HTML bodies are cleaned before any client can see them (Spec: What the service does, 4).
// Scripts, event handlers, forms, frames and remote-code URLs go; layout and inline images stay.
const OPTIONS: sanitizeHtml.IOptions = {
  allowedTags: [...sanitizeHtml.defaults.allowedTags, 'img', 'font', 'center', 'span', 'div', 'table', 'thead', 'tbody', 'tfoot', 'tr', 'td', 'th', 'colgroup', 'col', 'caption', 'hr', 'br', 'u', 's', 'small', 'big', 'sub', 'sup', 'style'],
  disallowedTagsMode: 'discard',
  allowedAttributes: {
    '*': ['style', 'align', 'valign', 'width', 'height', 'bgcolor', 'color', 'dir', 'lang', 'title', 'class'],
    a: ['href', 'name', 'target', 'rel'],
    img: ['src', 'alt', 'border', 'hspace', 'vspace'],
    font: ['face', 'size', 'color'],
    table: ['border', 'cellpadding', 'cellspacing', 'summary'],
    td: ['colspan', 'rowspan', 'nowrap'],
    th: ['colspan', 'rowspan', 'nowrap', 'scope'],
  },
  allowedSchemes: ['http', 'https', 'mailto', 'cid', 'data'],
  allowedSchemesByTag: { img: ['http', 'https', 'cid', 'data'] },
  allowProtocolRelative: false,
  allowVulnerableTags: true, // <style> is kept; its CSS is constrained below
  allowedStyles: {
    '*': {
      color: [/^[#a-z0-9(),.\s%]+$/i], 'background-color': [/^[#a-z0-9(),.\s%]+$/i], 'text-align': [/^(left|right|center|justify)$/],
      'font-size': [/^[\d.]+(px|pt|em|rem|%)$/], 'font-weight': [/^(normal|bold|\d00)$/], 'font-style': [/^(normal|italic)$/], 'font-family': [/^[\w\s,'"-]+$/],
      'text-decoration': [/^[a-z\s-]+$/], width: [/^[\d.]+(px|%|em)?$/], height: [/^[\d.]+(px|%|em)?$/],
      margin: [/^[\d.\s]+(px|em|%)?[\d.\spxem%]*$/], padding: [/^[\d.\s]+(px|em|%)?[\d.\spxem%]*$/], border: [/^[\w\s#.()-]+$/], 'line-height': [/^[\d.]+(px|em|%)?$/],
    },
  },
  transformTags: {
    a: (tagName, attribs) => ({ tagName, attribs: { ...attribs, rel: 'noopener noreferrer nofollow', target: '_blank' } }),
  },
  exclusiveFilter: (frame) => frame.tag === 'style' && /expression\s*\(|javascript:|@import|behavior\s*:|url\s*\(\s*['"]?\s*javascript/i.test(frame.text),
};

export function sanitizeMailHtml(html: string): string {
  return sanitizeHtml(html, OPTIONS);
}
