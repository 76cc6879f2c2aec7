// Cross-checks the WBXML encoder with two decoders nobody here wrote: libwbxml's wbxml2xml
// (Debian libwbxml2-utils) and Horde's ActiveSync decoder (Debian php-horde-activesync). Each
// message we encode must decode, in each tool, to the same elements in the same places. The tools
// name some tags their own way (older spellings, their own prefixes); the tables below translate
// their names to ours. Where a tool has no entry for a token, it is listed with why and expected
// there as the tool's "unknown" — for that tool only.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CODE_PAGES, el, encode } from '../../../lib/plugins/eas/wbxml/index.js';
import type { WbxmlElement } from '../../../lib/plugins/eas/wbxml/index.js';
import { programPath, requirePrograms } from '../../helpers/peers.js';
import { MESSAGES } from '../../fixtures/eas/wbxml-messages.js';

const HORDE_SCRIPT = join(import.meta.dirname, '../../fixtures/eas/horde-decode.php');
const dir = mkdtempSync(join(tmpdir(), 'svcmail-wbxml-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** One event of a document: a start tag with content ('S'), an empty one ('S!'), an end ('E'). */
type Event = string;
const UNKNOWN = '?';

/**
 * Our events for the tree, with the tags a tool lacks as UNKNOWN. `blur`: the tool loses track of
 * namespaces below an element it does not know (libwbxml), so below one only local names count.
 */
function expected(tree: WbxmlElement, lacks: ReadonlySet<string>, blur = false, below = false): Event[] {
  const name = `${below ? UNKNOWN : tree.page}:${tree.tag}`;
  const unknown = lacks.has(`${tree.page}:${tree.tag}`) || lacks.has(`${tree.page}:*`);
  const shown = unknown ? UNKNOWN : name;
  const hasContent = Boolean(tree.children?.length) || tree.text !== undefined || tree.opaque !== undefined;
  if (!hasContent) return [`S! ${shown}`];
  const children = (tree.children ?? []).flatMap((c) => expected(c, lacks, blur, below || (blur && unknown)));
  return [`S ${shown}`, ...children, 'E'];
}

function translate(page: string, tag: string, pages: Record<string, string>, tags: Record<string, string>): string {
  const ours = `${pages[page] ?? page}:${tag}`;
  return tags[ours] ?? ours;
}

// libwbxml 0.11.8 (Debian bookworm). Its names: the 2.5-era contact address names, a "Recurrence_"
// (and "Attendee_", "Exception_", "Organizer_") prefix for repeated names, and a few others.
const LIBWBXML = {
  pages: { Gal: 'GAL' } as Record<string, string>,
  tags: {
    'Contacts:AssistantTelephoneNumber': 'Contacts:AssistantPhoneNumber',
    'Contacts:CompressedRTF': 'Contacts:Rtf',
    ...Object.fromEntries(
      ['Business', 'Home', 'Other'].flatMap((w) =>
        ['City', 'Country', 'PostalCode', 'State', 'Street'].map((f) => [`Contacts:${w}${f}`, `Contacts:${w}Address${f}`]),
      ),
    ),
    'Email:Reply-To': 'Email:ReplyTo',
    'Email:DTStamp': 'Email:DtStamp',
    'Email:AttOId': 'Email:Att0Id',
    'AirNotify:ServerId': 'AirNotify:ServerEntryId',
    'AirNotify:Responses': 'AirNotify:Replies',
    'Calendar:TimeZone': 'Calendar:Timezone',
    'Calendar:DTStamp': 'Calendar:DtStamp',
    'Calendar:Attendee_Email': 'Calendar:Email',
    'Calendar:Attendee_Name': 'Calendar:Name',
    'Calendar:Attendee_Status': 'Calendar:AttendeeStatus',
    'Calendar:Attendee_Type': 'Calendar:AttendeeType',
    'Calendar:Exception_Deleted': 'Calendar:Deleted',
    'Calendar:Exception_StartTime': 'Calendar:ExceptionStartTime',
    'Calendar:Organizer_Email': 'Calendar:OrganizerEmail',
    'Calendar:Organizer_Name': 'Calendar:OrganizerName',
    'Calendar:Compressed_RTF': 'Calendar:Rtf',
    'Tasks:UTCDueDate': 'Tasks:UtcDueDate',
    'Tasks:UTCStartDate': 'Tasks:UtcStartDate',
    'Provision:DeviceEncryptionEnabled': 'Provision:RequireStorageCardEncryption', // its 12.0 name
    'Settings:ihsManagementInformation': 'Settings:RightsManagementInformation', // a typo in libwbxml's table
    'ComposeMail:MIME': 'ComposeMail:Mime',
    'ComposeMail:ForwardeeName': 'ComposeMail:Name',
    'ComposeMail:ForwardeeEmail': 'ComposeMail:Email',
    'RightsManagement:RMOwner': 'RightsManagement:Owner',
    'RightsManagement:RemoveRightsManagementDistribution': 'RightsManagement:RemoveRightsManagementProtection',
  } as Record<string, string>,
  /** What libwbxml 0.11.8's table lacks. */
  lacks: new Set([
    'MeetingResponse:ProposedStartTime', // 16.1
    'MeetingResponse:ProposedEndTime', // 16.1
    'Provision:AccountOnlyRemoteWipe', // 16.1
    'Search:Searches', // 2.5 only
    'Search:SubstringOp', // 2.5 only
    'Find:*', // page 25, 16.1
  ]),
};

// Horde_ActiveSync 2.41.9 (Debian bookworm). It names tags after Z-Push's constants ("Synchronize",
// "Folder" for Collection…) and some namespaces after the 2.5 POOM names.
const HORDE = {
  pages: {
    '': 'AirSync',
    POOMCONTACTS: 'Contacts',
    POOMMAIL: 'Email',
    POOMCAL: 'Calendar',
    POOMTASKS: 'Tasks',
    POOMCONTACTS2: 'Contacts2',
    POOMMAIL2: 'Email2',
  } as Record<string, string>,
  tags: {
    ...Object.fromEntries(
      Object.entries({
        Synchronize: 'Sync',
        Replies: 'Responses',
        Modify: 'Change',
        Remove: 'Delete',
        ClientEntryId: 'ClientId',
        ServerEntryId: 'ServerId',
        Folder: 'Collection',
        FolderType: 'Class',
        FolderId: 'CollectionId',
        Folders: 'Collections',
        Data: 'ApplicationData',
        RtfTruncation: 'RTFTruncation',
      }).map(([h, o]) => [`AirSync:${h}`, `AirSync:${o}`]),
    ),
    'Contacts:AssistnamePhoneNumber': 'Contacts:AssistantPhoneNumber',
    ...Object.fromEntries(
      ['Business', 'Home', 'Other'].flatMap((w) =>
        ['City', 'Country', 'PostalCode', 'State', 'Street'].map((f) => [`Contacts:${w}${f}`, `Contacts:${w}Address${f}`]),
      ),
    ),
    'Email:Reply-To': 'Email:ReplyTo',
    'Email:AttOid': 'Email:Att0Id',
    'Move:Moves': 'Move:MoveItems',
    'GetItemEstimate:Folders': 'GetItemEstimate:Collections',
    'GetItemEstimate:Folder': 'GetItemEstimate:Collection',
    'GetItemEstimate:FolderType': 'GetItemEstimate:Class',
    'GetItemEstimate:FolderId': 'GetItemEstimate:CollectionId',
    'FolderHierarchy:ServerEntryId': 'FolderHierarchy:ServerId',
    'FolderHierarchy:Remove': 'FolderHierarchy:Delete',
    'MeetingResponse:FolderId': 'MeetingResponse:CollectionId',
    'Tasks:Rtf': 'Tasks:CompressedRTF',
    'Ping:ServerEntryId': 'Ping:Id',
    'Ping:FolderType': 'Ping:Class',
    'Provision:DeviceEncryptionEnabled': 'Provision:RequireStorageCardEncryption',
    'Provision:MaxHTMLBodyTruncationSize': 'Provision:MaxEmailHTMLBodyTruncationSize',
    'Provision:RequireEncryptedSMIMEAlgorithm': 'Provision:RequireEncryptionSMIMEAlgorithm',
    'AirSyncBase:Annontation': 'AirSyncBase:Annotation', // a typo in Horde's table
    'ItemOperations:EmptyFolderContent': 'ItemOperations:EmptyFolderContents',
    'ComposeMail:MIME': 'ComposeMail:Mime',
    'ComposeMail:ForwardeeName': 'ComposeMail:Name',
    'ComposeMail:ForwardeeEmail': 'ComposeMail:Email',
    'Email2:UmCallerId': 'Email2:UmCallerID',
    'RightsManagement:RemoveRightsManagementDistribution': 'RightsManagement:RemoveRightsManagementProtection',
  } as Record<string, string>,
  /** What Horde_ActiveSync 2.41.9's table lacks. */
  lacks: new Set([
    'AirNotify:*', // page 3, 2.5 only
    'MeetingResponse:ProposedStartTime', // 16.1
    'MeetingResponse:ProposedEndTime', // 16.1
    'Provision:AccountOnlyRemoteWipe', // 16.1
    'Search:Searches', // 2.5 only
    'Search:SubstringOp', // 2.5 only
    'Find:*', // page 25, 16.1
  ]),
};

function write(name: string, tree: WbxmlElement): string {
  const file = join(dir, `${name.replace(/[^A-Za-z0-9]+/g, '-')}.wbxml`);
  writeFileSync(file, encode(tree));
  return file;
}

/** wbxml2xml's XML as events, namespaces followed down the tree. */
function libwbxmlEvents(xml: string): Event[] {
  const events: Event[] = [];
  const namespaces: string[] = [];
  let unknownDepth = 0; // open elements libwbxml did not know; below them its namespaces are unreliable
  const body = xml.replace(/<\?xml[^>]*>/, '').replace(/<!DOCTYPE[^>]*>/, '');
  for (const [, end, tag, attrs, empty] of body.matchAll(/<(\/?)([A-Za-z0-9_.-]+)([^>]*?)(\/?)>/g)) {
    if (end) {
      if (namespaces.pop() === UNKNOWN) unknownDepth--;
      events.push('E');
      continue;
    }
    const ns = /xmlns="([^"]*):"/.exec(attrs!)?.[1] ?? namespaces.at(-1) ?? '';
    const local = tag!.replace(/^Recurrence_/, '');
    const known = unknownDepth > 0 ? `${UNKNOWN}:${local}` : translate(ns, local, LIBWBXML.pages, LIBWBXML.tags);
    const name = tag === 'unknown' ? UNKNOWN : known;
    if (empty) events.push(`S! ${name}`);
    else {
      namespaces.push(tag === 'unknown' ? UNKNOWN : ns);
      if (tag === 'unknown') unknownDepth++;
      events.push(`S ${name}`);
    }
  }
  return events;
}

function viaLibwbxml(file: string): { xml: string; events: Event[] } {
  const out = `${file}.xml`;
  execFileSync(programPath('wbxml2xml')!, ['-l', 'ACTIVESYNC', '-m', '0', '-o', out, file], { stdio: 'pipe' });
  const xml = execFileSync('cat', [out], { encoding: 'utf8' });
  return { xml, events: libwbxmlEvents(xml) };
}

/** Horde's token lines as events (its content lines left out). */
function viaHorde(file: string): Event[] {
  const out = execFileSync(programPath('php-horde-activesync')!, [HORDE_SCRIPT, file], { encoding: 'utf8' });
  return out
    .split('\n')
    .filter((l) => l.startsWith('S') || l === 'E')
    .map((l) => {
      const [kind, name] = l.split(' ');
      if (kind === 'E' || name === UNKNOWN) return l;
      const cut = name!.lastIndexOf(':');
      return `${kind} ${translate(name!.slice(0, cut < 0 ? 0 : cut), name!.slice(cut + 1), HORDE.pages, HORDE.tags)}`;
    });
}

/** Every tag of a page, each holding text, under an AirSync Sync root. */
const pageDocument = (page: (typeof CODE_PAGES)[number]) =>
  el(
    'AirSync',
    'Sync',
    [...page.tags.values()].map((tag) => el(page.name, tag, 'x')),
  );

describe.runIf(requirePrograms('wbxml2xml'))('libwbxml (wbxml2xml) decodes what we encode', () => {
  it.each(Object.entries(MESSAGES))('%s', (name, tree) => {
    const { xml, events } = viaLibwbxml(write(`lib-${name}`, tree));
    const want = expected(tree, LIBWBXML.lacks, true);
    if (!want.some((e) => e.endsWith(UNKNOWN))) expect(xml).not.toContain('<unknown');
    expect(events).toEqual(want);
  });

  it.each(CODE_PAGES.map((p) => [p.page, p.name, p] as const))('every token of page %i (%s)', (_n, _name, page) => {
    const tree = pageDocument(page);
    expect(viaLibwbxml(write(`lib-page-${page.page}`, tree)).events).toEqual(expected(tree, LIBWBXML.lacks, true));
  });
});

describe.runIf(requirePrograms('php-horde-activesync'))("Horde's ActiveSync decoder decodes what we encode", () => {
  it.each(Object.entries(MESSAGES))('%s', (name, tree) => {
    expect(viaHorde(write(`horde-${name}`, tree))).toEqual(expected(tree, HORDE.lacks));
  });

  it.each(CODE_PAGES.map((p) => [p.page, p.name, p] as const))('every token of page %i (%s)', (_n, _name, page) => {
    const tree = pageDocument(page);
    expect(viaHorde(write(`horde-page-${page.page}`, tree))).toEqual(expected(tree, HORDE.lacks));
  });
});
