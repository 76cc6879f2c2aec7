import { ApiError, type PluginContext, type PluginRequest, type PluginResponse, type SettingName } from '../api.js';
import { STATUS, statusOnly, type EasCommand, type EasRequest } from './command.js';
import { COMMANDS } from './commands.js';
import { REFUSED_COMMANDS } from './folder-changes.js';
import { bodyOf, policyKeyOf, queryOf, requestVersion, versionHeaders, wbxml, WbxmlError, VERSIONS } from './protocol.js';

/** Every setting the plugin reads (its manifest names them). */
export const SETTINGS = [
  'mail:eas:provision:require_provisioning',
  'mail:eas:provision:device_password_enabled',
  'mail:eas:provision:alphanumeric_password_required',
  'mail:eas:provision:min_password_length',
  'mail:eas:provision:max_inactivity_seconds',
  'mail:eas:provision:max_failed_attempts',
  'mail:eas:provision:allow_simple_password',
  'mail:eas:provision:require_encryption',
  'mail:eas:provision:attachments_enabled',
  'mail:eas:sync:max_window_size',
  'mail:eas:max_request_bytes',
  'mail:eas:ping:max_heartbeat_seconds',
  'mail:eas:ping:min_heartbeat_seconds',
  'mail:eas:ping:max_folders',
] as const satisfies readonly SettingName[];

const DEVICE_ID = /^[A-Za-z0-9]{1,64}$/;
const header = (req: PluginRequest, name: string) => [req.headers[name]].flat()[0] ?? '';

/** Why a device may not run this command now: the Status its command root carries, or null. */
function refused(r: EasRequest, cmd: EasCommand): number | null {
  const { device } = r;
  if (device.blocked) return STATUS.deviceBlocked;
  if (cmd.withoutPolicy) return null;
  if (device.wipe === 'requested' || device.wipe === 'account-only') return STATUS.remoteWipeRequested;
  if (!r.host.setting('mail:eas:provision:require_provisioning')) return null;
  if (!device.policyKey) return STATUS.deviceNotProvisioned;
  return policyKeyOf(r.req) === device.policyKey ? null : STATUS.invalidPolicyKey;
}

/**
 * POST ?Cmd=: the query, the version and the device first (each a clear 400 when wrong), then the
 * device's standing (blocked, wiped, not provisioned: the command's Status), then the command.
 */
export async function dispatch(req: PluginRequest, { host, caller }: PluginContext): Promise<PluginResponse> {
  const limit = host.setting('mail:eas:max_request_bytes');
  if (Buffer.isBuffer(req.body) && req.body.length > limit) throw new ApiError('api-110', `The body is larger than ${limit} bytes`);
  const q = queryOf(req);
  if (!q)
    throw new ApiError(
      'api-106',
      'The base64-encoded query form is not supported: send Cmd, User, DeviceId and DeviceType as plain query parameters',
    );
  const v = requestVersion(req);
  if ('unsupported' in v)
    throw new ApiError('api-106', `Protocol version ${v.unsupported} is not offered; use one of ${VERSIONS.join(', ')}`);
  if (!DEVICE_ID.test(q.deviceId)) throw new ApiError('api-106', 'DeviceId must be 1 to 64 letters and digits');
  const cmd = COMMANDS[q.cmd] ?? REFUSED_COMMANDS[q.cmd];
  if (!cmd) return { status: 501, headers: versionHeaders(Object.keys(COMMANDS)), body: `${q.cmd} is not implemented by this server` };
  let body;
  try {
    body = bodyOf(req, limit);
  } catch (e) {
    if (e instanceof WbxmlError) throw new ApiError('api-106', `Malformed WBXML: ${e.message}`);
    throw e;
  }
  const me = caller!;
  const mailbox = await me.mailbox();
  const device = await me.devices.open(q.deviceId, {
    deviceType: q.deviceType.slice(0, 64),
    userAgent: header(req, 'user-agent').slice(0, 256),
    protocolVersion: v.version,
  });
  const r: EasRequest = { req, body, host, caller: me, device, version: v.version, mailboxUid: String(mailbox.uid) };
  const status = refused(r, cmd);
  if (status !== null) return wbxml(statusOnly(cmd, status));
  // Well-formed WBXML of another command: the common InvalidXML status, before the command reads it.
  if (body && (body.page !== cmd.root.page || body.tag !== cmd.root.tag)) return wbxml(statusOnly(cmd, STATUS.invalidXml));
  let out: PluginResponse;
  try {
    out = await cmd.handle(r);
  } catch (e) {
    // An answer that cannot be written (an element the request named that the answer may not hold):
    // the request's fault, said as InvalidXML rather than a 500.
    if (!(e instanceof WbxmlError)) throw e;
    host.log.warn({ err: e, cmd: q.cmd }, 'mobile sync: the answer to a malformed request could not be encoded');
    return wbxml(statusOnly(cmd, STATUS.invalidXml));
  }
  return { ...out, headers: { ...out.headers, 'ms-server-activesync': '16.1' } };
}
