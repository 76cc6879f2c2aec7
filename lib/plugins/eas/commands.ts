import type { EasCommand } from './command.js';
import { sendMail, smartForward, smartReply } from './compose.js';
import { getItemEstimate } from './estimate.js';
import { folderSync } from './folder-sync.js';
import { itemOperations } from './item-operations.js';
import { meetingResponse } from './meeting-response.js';
import { moveItems } from './move-items.js';
import { ping } from './ping.js';
import { provision } from './provision.js';
import { resolveRecipients } from './resolve-recipients.js';
import { search } from './search.js';
import { settings } from './settings.js';
import { sync } from './sync.js';

/** The commands this plugin implements (OPTIONS lists them; any other Cmd answers 501). */
export const COMMANDS: Record<string, EasCommand> = {
  Provision: provision,
  FolderSync: folderSync,
  Sync: sync,
  Ping: ping,
  GetItemEstimate: getItemEstimate,
  ItemOperations: itemOperations,
  MoveItems: moveItems,
  Settings: settings,
  Search: search,
  ResolveRecipients: resolveRecipients,
  MeetingResponse: meetingResponse,
  SendMail: sendMail,
  SmartReply: smartReply,
  SmartForward: smartForward,
};
