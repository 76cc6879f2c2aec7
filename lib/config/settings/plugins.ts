import { z } from 'zod';
import { setting } from '../define.js';

const hostPort = z.string().regex(/^(\[[0-9a-fA-F:]+\]|[^:\s]+):\d{1,5}$|^\/.+/, 'must be host:port or an absolute unix socket path');

/**
 * Spec: Autodiscover plugin — URLs come from this setting, which must be https://; until it is set
 * nothing is advertised. No credentials, query or fragment: it is the base every advertised URL
 * is built on.
 */
const publicUrl = z.union([
  z.literal(''),
  z.url({ protocol: /^https$/, message: 'must be an https:// URL such as https://mail.example.org' }).refine((u) => {
    const p = new URL(u);
    return !p.username && !p.password && !p.search && !p.hash;
  }, 'must be an https:// URL without credentials, query or fragment'),
]);

// The protocols daemon and the plugins it hosts. A plugin reads only the settings its manifest
// names, and those are named mail:<plugin>:… (lib/plugins checks both when it loads a plugin).
export const pluginSettings = {
  'listen:protocols': setting(hostPort, {
    default: '127.0.0.1:8083',
    doc: 'Address the protocols daemon (plugin routes /Vendor-Server-ActiveSync, /mapi, /autodiscover) listens on; the api daemon forwards those paths here when no nginx is in front.',
  }),
  'mail:autodiscover:public_url': setting(publicUrl, {
    default: '',
    doc: 'Public https:// base URL that Autodiscover answers advertise (for instance https://mail.example.org); empty: Autodiscover advertises nothing.',
  }),
};
