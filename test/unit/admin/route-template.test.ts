// lib/admin/metrics.ts: requests are counted under their route template, never the raw path (ids
// would make a label value per record).
import { describe, expect, it } from 'vitest';
import { routeTemplate } from '../../../lib/admin/metrics.js';

describe('routeTemplate', () => {
  it.each([
    ['/api/mail/folders?mailboxUid=01a21250-2054-73a1-aac6-bed84a4097db&limit=100', '/api/mail/folders'],
    ['/api/mail/mailboxes/01a21250-2054-73a1-aac6-bed84a4097db', '/api/mail/mailboxes/:id'],
    ['/api/mail/messages/01A21250-2054-73A1-AAC6-BED84A4097DB/raw', '/api/mail/messages/:id/raw'],
    ['/api/mail/calendar-share-links/feed/abcdefghijklmnopqrstuvwx_-1', '/api/mail/calendar-share-links/feed/:id'],
    ['/api/mail/things/42/parts/', '/api/mail/things/:id/parts'],
    ['/api/mail/mail-filter-rules', '/api/mail/mail-filter-rules'],
    ['/api/mail/a-name-of-23-characters', '/api/mail/a-name-of-23-characters'],
    ['/', '/'],
  ])('%s -> %s', (url, template) => {
    expect(routeTemplate(url)).toBe(template);
  });
});
