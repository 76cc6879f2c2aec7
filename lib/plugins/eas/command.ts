import type { CallerApi, EasDevice, PluginHostApi, PluginRequest, PluginResponse } from '../api.js';
import type { Version } from './protocol.js';
import { el, type PageName, type WbxmlElement } from './wbxml/index.js';

/** What a command handler gets: the request, its decoded body, the caller and the caller's device. */
export interface EasRequest {
  req: PluginRequest;
  body: WbxmlElement | null;
  host: PluginHostApi;
  caller: CallerApi;
  device: EasDevice;
  version: Version;
  /** The device's mailbox (the caller's own). */
  mailboxUid: string;
}

export interface EasCommand {
  /** The root element of its request and answer (where a device-level Status goes). */
  root: { page: PageName; tag: string };
  /** Runs before Provision completed (Provision itself, and commands MS-ASPROV exempts). */
  withoutPolicy?: boolean;
  handle(r: EasRequest): Promise<PluginResponse>;
}

/**
 * Global Status values (MS-ASCMD 2.2.2): what a device is told, inside the command's own root
 * element, when the request cannot be served at all.
 */
export const STATUS = {
  invalidContent: 101,
  invalidWbxml: 102,
  invalidXml: 103,
  deviceBlocked: 129,
  remoteWipeRequested: 140,
  deviceNotProvisioned: 142,
  policyRefresh: 143,
  invalidPolicyKey: 144,
  serverError: 110,
} as const;

/** `<Root><Status>n</Status></Root>` in the command's page. */
export function statusOnly(cmd: EasCommand, status: number): WbxmlElement {
  return el(cmd.root.page, cmd.root.tag, [el(cmd.root.page, 'Status', status)]);
}
