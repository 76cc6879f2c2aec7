// The values the directory's prefix query matches (lib/mail/directory.ts): the address, its domain,
// the display name and each word of it, lower-cased. Declared on mailboxes and distribution lists as
// the value index "directory" (lib/storage ModelDef.valueIndexes).

export function directoryTerms(rec: Record<string, unknown>): string[] {
  const address = String(rec.address ?? '').toLowerCase();
  const name = String(rec.name ?? '')
    .trim()
    .toLowerCase();
  const domain = address.slice(address.lastIndexOf('@') + 1);
  return [address, domain, name, ...name.split(/\s+/)].filter(Boolean);
}

export const directoryIndex = { name: 'directory', from: ['address', 'name'], values: directoryTerms };
