import { randomInt } from 'node:crypto';
import type { PluginHostApi, PluginResponse } from '../api.js';
import type { EasCommand, EasRequest } from './command.js';
import { kid, kids, textOf, wbxml } from './protocol.js';
import { ns, type WbxmlElement } from './wbxml/index.js';

// Provision (MS-ASPROV, MS-ASCMD 2.2.1.14): the two-step policy handshake. Step one hands out the
// policy (the mail:eas:provision:* settings) with a temporary key; step two, the device's
// acknowledgement of that key, answers the final key it sends with every command from then on
// (X-MS-PolicyKey). A remote wipe an administrator asked for is delivered here, and the device's
// acknowledgement of it recorded. DeviceInformation inside Provision is stored as Settings stores it.

const pv = ns('Provision');
const st = ns('Settings');
const POLICY_TYPE = 'MS-EAS-Provisioning-WBXML';

/** Provision Status values (MS-ASPROV 2.2.2.53). */
const PROVISION = { ok: 1, protocolError: 2 } as const;
/** Policy Status values: 1 applied, 2 no policy for this client, 3 unknown policy type, 5 wrong policy key acknowledged. */
const POLICY = { ok: 1, unknownType: 3, wrongKey: 5 } as const;

const flag = (b: boolean) => (b ? '1' : '0');

/** The EASProvisionDoc of the policy settings. */
function provisionDoc(host: PluginHostApi): WbxmlElement {
  const s = <K extends Parameters<PluginHostApi['setting']>[0]>(k: K) => host.setting(k);
  const failed = s('mail:eas:provision:max_failed_attempts');
  const idle = s('mail:eas:provision:max_inactivity_seconds');
  return pv('EASProvisionDoc', [
    pv('DevicePasswordEnabled', flag(s('mail:eas:provision:device_password_enabled'))),
    pv('AlphanumericDevicePasswordRequired', flag(s('mail:eas:provision:alphanumeric_password_required'))),
    pv('PasswordRecoveryEnabled', '0'),
    pv('RequireStorageCardEncryption', flag(s('mail:eas:provision:require_encryption'))),
    pv('AttachmentsEnabled', flag(s('mail:eas:provision:attachments_enabled'))),
    pv('MinDevicePasswordLength', s('mail:eas:provision:min_password_length')),
    pv('MaxInactivityTimeDeviceLock', idle || ''),
    pv('MaxDevicePasswordFailedAttempts', failed || ''),
    pv('AllowSimpleDevicePassword', flag(s('mail:eas:provision:allow_simple_password'))),
    pv('AllowStorageCard', '1'),
    pv('AllowCamera', '1'),
    pv('RequireDeviceEncryption', flag(s('mail:eas:provision:require_encryption'))),
    pv('AllowUnsignedApplications', '1'),
    pv('AllowUnsignedInstallationPackages', '1'),
    pv('AllowWiFi', '1'),
    pv('AllowTextMessaging', '1'),
    pv('AllowPOPIMAPEmail', '1'),
    pv('AllowBluetooth', '2'),
    pv('AllowIrDA', '1'),
    pv('RequireManualSyncWhenRoaming', '0'),
    pv('AllowDesktopSync', '1'),
    pv('MaxCalendarAgeFilter', '0'),
    pv('AllowHTMLEmail', '1'),
    pv('MaxEmailAgeFilter', '0'),
    pv('AllowSMIMESoftCerts', '1'),
    pv('AllowBrowser', '1'),
    pv('AllowConsumerEmail', '1'),
    pv('AllowRemoteDesktop', '1'),
    pv('AllowInternetSharing', '1'),
  ]);
}

/** A policy key: a positive 32-bit number other than 0 (0 means "none" on the wire). */
const newKey = () => randomInt(1, 0x7fffffff);

/** The DeviceInformation Set of a Settings or Provision request, as name → value. */
export function deviceInformation(set: WbxmlElement | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const c of set?.children ?? []) if (c.text !== undefined && c.tag !== 'EnableOutboundSMS') out[c.tag] = c.text.slice(0, 256);
  return out;
}

async function handle(r: EasRequest): Promise<PluginResponse> {
  const { body, caller, device, version } = r;
  const answer = (children: WbxmlElement[]) => wbxml(pv('Provision', children));
  if (!body) return answer([pv('Status', PROVISION.protocolError)]);
  const info = kid(body, 'DeviceInformation');
  const infoAnswer = info ? [st('DeviceInformation', [st('Status', 1)])] : [];
  if (info) await caller.devices.update(device.uid, { deviceInfo: deviceInformation(kid(info, 'Set')) });

  // The device acknowledges a wipe it was sent: recorded; it wipes itself now.
  const wipeAck = kid(body, 'RemoteWipe') ?? kid(body, 'AccountOnlyRemoteWipe');
  if (wipeAck) {
    // Wiped and blocked: the account is gone from the device; it syncs again only once unblocked.
    await caller.devices.update(device.uid, { wipe: 'wiped', blocked: true, policyKey: 0, pendingPolicyKey: 0 });
    r.host.log.warn({ device: device.deviceId, user: device.userUid }, 'mobile device acknowledged the remote wipe');
    return answer([pv('Status', PROVISION.ok)]);
  }
  if (device.wipe === 'requested' || device.wipe === 'account-only') {
    // 16.1 devices can wipe only this account's data; older ones only know the whole-device wipe.
    const accountOnly = device.wipe === 'account-only' && version === '16.1';
    return answer([...infoAnswer, pv('Status', PROVISION.ok), pv(accountOnly ? 'AccountOnlyRemoteWipe' : 'RemoteWipe')]);
  }

  const policy = kid(kid(body, 'Policies'), 'Policy');
  const type = textOf(policy, 'PolicyType');
  if (!policy || type !== POLICY_TYPE) {
    const status = policy ? POLICY.unknownType : undefined;
    return answer([
      ...infoAnswer,
      pv('Status', status ? PROVISION.ok : PROVISION.protocolError),
      ...(status ? [pv('Policies', [pv('Policy', [pv('PolicyType', type ?? ''), pv('Status', status)])])] : []),
    ]);
  }
  const acked = textOf(policy, 'PolicyKey');
  if (acked === undefined) {
    // Step one: the policy with a temporary key.
    const pending = newKey();
    await caller.devices.update(device.uid, { pendingPolicyKey: pending });
    return answer([
      ...infoAnswer,
      pv('Status', PROVISION.ok),
      pv('Policies', [
        pv('Policy', [
          pv('PolicyType', POLICY_TYPE),
          pv('Status', POLICY.ok),
          pv('PolicyKey', pending),
          pv('Data', [provisionDoc(r.host)]),
        ]),
      ]),
    ]);
  }
  // Step two: the device says it applied the policy of the temporary key.
  const applied = textOf(policy, 'Status') === '1';
  if (!device.pendingPolicyKey || acked !== String(device.pendingPolicyKey) || !applied) {
    return answer([
      ...infoAnswer,
      pv('Status', PROVISION.ok),
      pv('Policies', [pv('Policy', [pv('PolicyType', POLICY_TYPE), pv('Status', POLICY.wrongKey)])]),
    ]);
  }
  const final = newKey();
  await caller.devices.update(device.uid, { policyKey: final, pendingPolicyKey: 0 });
  return answer([
    ...infoAnswer,
    pv('Status', PROVISION.ok),
    pv('Policies', [pv('Policy', [pv('PolicyType', POLICY_TYPE), pv('Status', POLICY.ok), pv('PolicyKey', final)])]),
  ]);
}

export const provision: EasCommand = { root: { page: 'Provision', tag: 'Provision' }, withoutPolicy: true, handle };

/** For Settings: the DeviceInformation elements of a request (kids of Set). */
export const informationOf = (el: WbxmlElement | undefined) => kids(el, 'Set')[0];
