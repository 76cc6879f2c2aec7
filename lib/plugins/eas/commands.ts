import type { EasCommand } from './command.js';
import { folderSync } from './folder-sync.js';
import { ping } from './ping.js';
import { provision } from './provision.js';
import { sync } from './sync.js';

/** The commands this plugin implements (OPTIONS lists them; any other Cmd answers 501). */
export const COMMANDS: Record<string, EasCommand> = {
  Provision: provision,
  FolderSync: folderSync,
  Sync: sync,
  Ping: ping,
};
