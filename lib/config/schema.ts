import type { SettingDecl } from './define.js';
import { coreSettings } from './settings/core.js';
import { sendSettings } from './settings/send.js';
import { signinSettings } from './settings/signin.js';
import { escrowSettings } from './settings/escrow.js';
import { applianceSettings, ingestSecretSetting } from './settings/appliance.js';
import { ingestSettings } from './settings/ingest.js';
import { keySettings } from './settings/keys.js';
import { pushSettings } from './settings/push.js';
import { adminSettings } from './settings/admin.js';
import { pluginSettings } from './settings/plugins.js';
import { lifecycleSettings } from './settings/lifecycle.js';
import { securitySettings } from './settings/security.js';

// Every setting of the product. Each area declares its own file under settings/ and is listed here.
export const schema = {
  ...coreSettings,
  ...sendSettings,
  ...signinSettings,
  ...escrowSettings,
  ...applianceSettings,
  ...ingestSecretSetting,
  ...ingestSettings,
  ...keySettings,
  ...pushSettings,
  ...adminSettings,
  ...pluginSettings,
  ...lifecycleSettings,
  ...securitySettings,
} satisfies Record<string, SettingDecl>;

export type SettingName = keyof typeof schema;
