import type { PluginResponse } from '../api.js';
import type { EasCommand, EasRequest } from './command.js';
import { wbxml } from './protocol.js';
import { ns } from './wbxml/index.js';

// FolderCreate, FolderDelete and FolderUpdate (MS-ASCMD 2.2.1.3, 2.2.1.4, 2.2.1.7): folders made,
// removed or renamed on the device are not supported (Spec: Mobile sync plugin). They answer
// Status 3 — the folder is one the device may not change — which clients show as a refusal and do
// not retry; folders are managed in the web app and reach the device through FolderSync.

const fh = ns('FolderHierarchy');
const REFUSED = 3;

const refuse = (tag: 'FolderCreate' | 'FolderDelete' | 'FolderUpdate'): EasCommand => ({
  root: { page: 'FolderHierarchy', tag },
  handle: async (_r: EasRequest): Promise<PluginResponse> => wbxml(fh(tag, [fh('Status', REFUSED)])),
});

/** Commands a device may send that this server refuses with a status (not listed by OPTIONS). */
export const REFUSED_COMMANDS: Record<string, EasCommand> = {
  FolderCreate: refuse('FolderCreate'),
  FolderDelete: refuse('FolderDelete'),
  FolderUpdate: refuse('FolderUpdate'),
};
