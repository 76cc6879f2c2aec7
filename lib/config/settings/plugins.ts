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
    doc: 'Address the protocols daemon (plugin routes /Vendor-Server-ActiveSync and /Microsoft-Server-ActiveSync, /mapi, /autodiscover) listens on; the api daemon forwards those paths here when no nginx is in front.',
  }),
  // Mobile sync (the eas plugin). The provisioning policy a device must accept (MS-ASPROV EASProvisionDoc).
  'mail:eas:provision:require_provisioning': setting(z.boolean(), {
    default: true,
    doc: 'Devices must run Provision and accept the policy before they sync (X-MS-PolicyKey checked on every command; 449 sends them back). Off: devices that never provision are served too.',
  }),
  'mail:eas:provision:device_password_enabled': setting(z.boolean(), {
    default: false,
    doc: 'The device must be locked with a password (DevicePasswordEnabled).',
  }),
  'mail:eas:provision:alphanumeric_password_required': setting(z.boolean(), {
    default: false,
    doc: 'The device password must contain letters and digits (AlphanumericDevicePasswordRequired).',
  }),
  'mail:eas:provision:min_password_length': setting(z.number().int().min(1).max(16), {
    default: 4,
    doc: 'Shortest device password (MinDevicePasswordLength), when a password is required.',
  }),
  'mail:eas:provision:max_inactivity_seconds': setting(z.number().int().nonnegative(), {
    default: 900,
    doc: 'The device locks itself after this many idle seconds (MaxInactivityTimeDeviceLock); 0: no limit.',
  }),
  'mail:eas:provision:max_failed_attempts': setting(z.number().int().min(0).max(16), {
    default: 0,
    doc: 'Wrong device passwords before the device wipes itself (MaxDevicePasswordFailedAttempts, 4–16); 0: not set.',
  }),
  'mail:eas:provision:allow_simple_password': setting(z.boolean(), {
    default: true,
    doc: 'Simple device passwords such as 1111 are allowed (AllowSimpleDevicePassword).',
  }),
  'mail:eas:provision:require_encryption': setting(z.boolean(), {
    default: false,
    doc: 'The device must encrypt its storage (RequireDeviceEncryption).',
  }),
  'mail:eas:provision:attachments_enabled': setting(z.boolean(), {
    default: true,
    doc: 'The device may download attachments (AttachmentsEnabled).',
  }),
  'mail:eas:sync:max_window_size': setting(z.number().int().min(1).max(512), {
    default: 512,
    doc: 'Most items one Sync answers per collection, whatever WindowSize the device asks for (MS-ASCMD: at most 512).',
  }),
  'mail:eas:max_request_bytes': setting(
    z
      .number()
      .int()
      .positive()
      .max(64 * 1024 * 1024),
    {
      default: 25 * 1024 * 1024,
      doc: 'Largest mobile-sync request body (a SendMail with attachments, base64 included), at most 64 MiB; 413 api-110 beyond.',
    },
  ),
  'mail:eas:ping:max_heartbeat_seconds': setting(z.number().int().min(60).max(3540), {
    default: 3540,
    doc: 'Longest Ping a device may park (HeartbeatInterval); longer asks are answered status 5 with this limit.',
  }),
  'mail:eas:ping:min_heartbeat_seconds': setting(z.number().int().min(1).max(3540), {
    default: 60,
    doc: 'Shortest Ping heartbeat a device may ask for; shorter asks are answered status 5 with this limit.',
  }),
  'mail:eas:ping:max_folders': setting(z.number().int().min(1).max(1000), {
    default: 300,
    doc: 'Most folders one Ping may watch; more is answered status 6 with this limit.',
  }),
  'mail:autodiscover:public_url': setting(publicUrl, {
    default: '',
    doc: 'Public https:// base URL that Autodiscover answers advertise (for instance https://mail.example.org); empty: Autodiscover advertises nothing.',
  }),
};
