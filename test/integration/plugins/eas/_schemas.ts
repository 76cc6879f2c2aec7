// Validation of the WBXML a test device exchanged against Microsoft's MS-ASCMD schemas
// (../shared/fixtures/ms-eas-schemas, the Open Specifications test suites' copies) with xmllint.
//
// XML: each body becomes XML through the product codec, toXml(decode(buf)), rather than wbxml2xml.
// The codec names every namespace after its code page ("AirSync:"), which is the schemas'
// targetNamespace once the colon goes, and uses the MS-ASWBXML tag names the schemas use; libwbxml
// writes some other names (ComposeMail Mime as MIME) and a DOCTYPE. Two tokens the codec names as
// Z-Push and Horde do are renamed to the protocol documents' names (ALIASES); the bytes are the same.
// That the codec reads the bytes as the other decoders do is what crossDecode checks beside this.
//
// Schemas: the shared files are read and rewritten once per process (the shared ones are never
// changed) and written, with the documents, to a temp dir per call. Each copy gets an xs:import for
// every other namespace its ref/type/base values name (prefixes resolved through its xmlns
// declarations), pointing at a generated hub per namespace that xs:includes every file of that
// namespace (AirSync = AirSync.xsd + SyncResponse.xsd, …): libxml2 keeps the first location it
// meets per namespace, and one namespace's elements are spread over several files. One xmllint
// validates all the documents of one namespace.
//
// Which schema: a document is validated with the hub of its root's namespace, so the declaration
// used is the global element of the root's name. For every command that is <Command>Response.xsd
// (Sync in SyncResponse.xsd, Provision in ProvisionResponse.xsd, …): the other files (AirSync.xsd,
// Provision.xsd, Search.xsd, Settings.xsd, ItemOperations.xsd, …) declare parts (SyncKey, Options,
// Query, PolicyType, …) but no request root, and no response declaration admits the requests the
// tests send (Sync's WindowSize/Options, Ping's HeartbeatInterval, Search's Store, … are not in
// them). The direction comes from the content (isResponse), so:
// - a response is validated whole with <Command>Response.xsd;
// - a request is validated in what fits: every outermost element in it that a file other than a
//   <Command>Response.xsd declares globally (AirSync SyncKey/Options, AirSyncBase BodyPreference,
//   Email Read/Flag, Search Query/Options, Provision PolicyType/PolicyKey, Settings OofState/Model,
//   ComposeMail ClientId/Mime, …), each as a document of its own. The root's own structure is not
//   checked (nothing here describes it).
// The schemas describe 16.1; the tests speak 14.0–16.1, and no document fails for the difference.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decode, toXml, type WbxmlElement } from '../../../../lib/plugins/eas/wbxml/index.js';
import { programPath, requirePrograms } from '../../../helpers/peers.js';

const SCHEMA_DIR = fileURLToPath(new URL('../../../../../shared/fixtures/ms-eas-schemas/', import.meta.url));
const XS = 'http://www.w3.org/2001/XMLSchema';

/**
 * Errors that are known, each with why: a document whose every xmllint error matches one of these
 * is not reported. Plugin entries go when the plugin is fixed; request entries are tests that send
 * an invalid request on purpose.
 */
export const KNOWN_FAILURES: { match: RegExp; reason: string }[] = [
  {
    match: /^request Settings:Settings part Settings:OofState: \d+: element OofState: .*The value '7' is not an element of the set/,
    reason: 'commands.test.ts sends OofState 7 on purpose (the error path)',
  },
  {
    match:
      /^request ComposeMail:SendMail part ComposeMail:ClientId: \d+: element ClientId: .*\[facet 'maxLength'\] The value has a length of '41'/,
    reason: 'compose.test.ts sends a 41-character ClientId on purpose (the error path)',
  },
];

/** Codec tag names that the protocol documents and the schemas spell otherwise (same token). */
const ALIASES: Record<string, string> = {
  // MS-ASEMAIL 2.2.2.74 Status, the flag's status: Email page token 0x3B.
  'Email:FlagStatus': 'Status',
  // MS-ASCMD 2.2.3.171 SMTPAddress: Settings page token 0x1F.
  'Settings:SmtpAddress': 'SMTPAddress',
};

interface SchemaFile {
  file: string;
  ns: string;
  /** Its global elements, as their names. */
  elements: Set<string>;
  /** The namespaces other than its own that its ref, type and base values name. */
  uses: Set<string>;
}

/** What one shared xsd declares and which other namespaces it uses. */
function scan(file: string): SchemaFile {
  const src = readFileSync(join(SCHEMA_DIR, file), 'utf8').replace(/<!--[\s\S]*?-->/g, '');
  const open = /<xs:schema\b[^>]*>/.exec(src)?.[0] ?? '';
  const ns = /targetNamespace\s*=\s*"([^"]*)"/.exec(open)?.[1] ?? '';
  const prefixes = new Map<string, string>();
  for (const m of open.matchAll(/xmlns(?::([\w.-]+))?\s*=\s*"([^"]*)"/g)) prefixes.set(m[1] ?? '', m[2]!);
  const elements = new Set<string>();
  const uses = new Set<string>();
  let depth = 0;
  for (const [, close, kind, attrs, self] of src.matchAll(/<(\/?)xs:(\w+)([^>]*?)(\/?)>/g)) {
    if (close) {
      depth--;
      continue;
    }
    const name = /\bname\s*=\s*"([^"]*)"/.exec(attrs!)?.[1];
    if (depth === 1 && kind === 'element' && name) elements.add(name);
    for (const [, value] of attrs!.matchAll(/\b(?:ref|type|base)\s*=\s*"([^"]*)"/g)) {
      const uri = prefixes.get(value!.includes(':') ? value!.slice(0, value!.indexOf(':')) : '');
      if (uri !== undefined && uri !== XS && uri !== ns) uses.add(uri);
    }
    if (!self) depth++;
  }
  return { file, ns, elements, uses };
}

const hubName = (uri: string) => `ns-${uri}.xsd`;

let prepared: { files: SchemaFile[]; texts: Map<string, string> } | null = null;

/** The copies with their imports and a hub per namespace (file name → text), made once per process. */
function prepare(): { files: SchemaFile[]; texts: Map<string, string> } {
  if (prepared) return prepared;
  const files = readdirSync(SCHEMA_DIR)
    .filter((f) => f.endsWith('.xsd') && !f.startsWith('Autodiscover'))
    .map(scan)
    .filter((s) => s.ns);
  const namespaces = new Set(files.map((s) => s.ns));
  const texts = new Map<string, string>();
  for (const s of files) {
    const imports = [...s.uses]
      .filter((uri) => namespaces.has(uri))
      .map((uri) => `<xs:import namespace="${uri}" schemaLocation="${hubName(uri)}"/>`);
    const src = readFileSync(join(SCHEMA_DIR, s.file), 'utf8');
    texts.set(
      s.file,
      src.replace(/<xs:schema\b[^>]*>/, (open) => [open, ...imports].join('\n')),
    );
  }
  for (const uri of namespaces) {
    const includes = files.filter((s) => s.ns === uri).map((s) => `<xs:include schemaLocation="${s.file}"/>`);
    texts.set(
      hubName(uri),
      [
        '<?xml version="1.0" encoding="UTF-8"?>',
        `<xs:schema xmlns:xs="${XS}" targetNamespace="${uri}" elementFormDefault="qualified">`,
        ...includes,
        '</xs:schema>',
        '',
      ].join('\n'),
    );
  }
  prepared = { files, texts };
  return prepared;
}

/**
 * Whether a document is a server's answer: it holds a Status of the root's own namespace, which a
 * request never does — except in Provision, where the device's acknowledgement echoes Policy/Status
 * and RemoteWipe/Status, so there only a Status right under the root makes an answer.
 */
export function isResponse(root: WbxmlElement): boolean {
  const status = (e: WbxmlElement): boolean => (e.children ?? []).some((c) => (c.page === root.page && c.tag === 'Status') || status(c));
  if (root.page === 'Provision') return (root.children ?? []).some((c) => c.page === 'Provision' && c.tag === 'Status');
  return status(root);
}

/** The tree with the codec names the schemas spell otherwise renamed. */
function renamed(e: WbxmlElement): WbxmlElement {
  const tag = ALIASES[`${e.page}:${e.tag}`] ?? e.tag;
  return { ...e, tag, ...(e.children ? { children: e.children.map(renamed) } : {}) };
}

/** The XML the schemas expect: namespaces without the trailing colon, opaque data as its base64. */
function xmlOf(e: WbxmlElement): string {
  const xml = toXml(renamed(e))
    .replace(/^<[^>]*>/, (open) => open.replace(/(xmlns(?::[\w.-]+)?=")([^"]*):"/g, '$1$2"'))
    .replace(/<!-- opaque, base64 -->/g, '');
  return `<?xml version="1.0" encoding="UTF-8"?>\n${xml}\n`;
}

/** The outermost elements of a request that a file other than a <Command>Response.xsd declares. */
function partsOf(root: WbxmlElement, files: SchemaFile[]): WbxmlElement[] {
  const declared = (e: WbxmlElement) =>
    files.some((s) => s.ns === e.page && !s.file.endsWith('Response.xsd') && s.elements.has(ALIASES[`${e.page}:${e.tag}`] ?? e.tag));
  const out: WbxmlElement[] = [];
  const walk = (e: WbxmlElement): void => {
    for (const c of e.children ?? []) {
      if (declared(c)) out.push(c);
      else walk(c);
    }
  };
  walk(root);
  return out;
}

/**
 * What the schemas say against the bodies, one entry per document that fails (its index in
 * `bodies`, direction, root, xmllint's errors and the XML); empty when every one is valid or a
 * known failure. Outside CI without xmllint it says so in one line and checks nothing.
 */
export function validateWire(bodies: Buffer[]): string[] {
  if (bodies.length === 0 || !requirePrograms('xmllint')) return [];
  if (!existsSync(SCHEMA_DIR)) return [`the schemas are missing: ${SCHEMA_DIR}`];
  const { files, texts } = prepare();
  const problems: string[] = [];
  // Documents by the namespace of their root, which picks the hub: one xmllint for each.
  const groups = new Map<string, { label: string; xml: string }[]>();
  bodies.forEach((body, i) => {
    let root: WbxmlElement;
    try {
      root = decode(body);
    } catch (err) {
      problems.push(`#${i}: does not decode: ${(err as Error).message}`);
      return;
    }
    const label = `${isResponse(root) ? 'response' : 'request'} ${root.page}:${root.tag}`;
    const docs = label.startsWith('response')
      ? [{ el: root, label }]
      : partsOf(root, files).map((el) => ({ el, label: `${label} part ${el.page}:${el.tag}` }));
    for (const d of docs) {
      const group = groups.get(d.el.page) ?? [];
      group.push({ label: `#${i} ${d.label}`, xml: xmlOf(d.el) });
      groups.set(d.el.page, group);
    }
  });
  const xmllint = programPath('xmllint')!;
  // The schemas go to a temp dir beside the documents, removed at the end: vitest ends its workers
  // with a signal, so a directory left for the process's life would stay in /tmp after every run.
  const work = mkdtempSync(join(tmpdir(), 'svcmail-eas-xsd-'));
  try {
    for (const [name, text] of texts) writeFileSync(join(work, name), text);
    for (const [ns, docs] of groups) {
      const hub = join(work, hubName(ns));
      if (!texts.has(hubName(ns))) {
        problems.push(...docs.map((d) => `${d.label}: no schema has the namespace ${ns}`));
        continue;
      }
      const paths = docs.map((d, k) => {
        const path = join(work, `doc-${ns}-${k}.xml`);
        writeFileSync(path, d.xml);
        return path;
      });
      const r = spawnSync(xmllint, ['--noout', '--nonet', '--schema', hub, ...paths], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
      const lines = r.stderr.split('\n');
      if (r.status !== 0 && lines.some((l) => /failed to compile|Schemas parser error/.test(l))) {
        problems.push(`${hubName(ns)} does not compile: ${r.stderr.slice(0, 2000)}`);
        continue;
      }
      paths.forEach((path, k) => {
        if (lines.includes(`${path} validates`)) return;
        const { label, xml } = docs[k]!;
        // Its errors (xmllint names the file on each), without the warning that "AirSync" is no URI.
        const errors = lines
          .filter((l) => l.startsWith(`${path}:`) && !l.includes('namespace warning'))
          .map((l) => l.slice(path.length + 1));
        const what = label.slice(label.indexOf(' ') + 1);
        if (errors.length && errors.every((e) => KNOWN_FAILURES.some((f) => f.match.test(`${what}: ${e}`)))) return;
        problems.push(`${label}: ${errors.join('\n  ') || 'fails to validate'}\n${xml}`);
      });
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return problems;
}
