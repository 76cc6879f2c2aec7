import { CODE_PAGE_TABLES } from './codepage-tables.js';

// Lookups over the code page tables: token → tag name for the decoder, page and tag name →
// token for the encoder, page name → namespace for the XML view. Built once at load.

/** A code page's name, which is its namespace without the colon: 'AirSync', 'AirSyncBase', … */
export type PageName = (typeof CODE_PAGE_TABLES)[number]['name'];

export interface CodePage {
  readonly page: number;
  readonly name: PageName;
  /** The namespace as clients write it in XML: the name and a colon ('AirSync:'). */
  readonly namespace: string;
  /** The prefix the XML view gives this namespace when it is not the default one. */
  readonly prefix: string;
  /** Tag name by token (0x05–0x3F), the current tags and the legacy ones together. */
  readonly tags: ReadonlyMap<number, string>;
  /** Token by tag name. */
  readonly tokens: ReadonlyMap<string, number>;
  /** The tokens only protocol versions before 12.1 use (MS-ASWBXML dropped them since). */
  readonly legacy: ReadonlySet<number>;
}

/** Adds a table's runs ('0x05: "A B"' is A = 0x05, B = 0x06) to the map; refuses clashes. */
function addRuns(into: Map<number, string>, runs: Readonly<Record<number, string>>, page: string): number[] {
  const added: number[] = [];
  for (const [first, names] of Object.entries(runs)) {
    names.split(/\s+/).forEach((name, i) => {
      const token = Number(first) + i;
      if (token < 0x05 || token > 0x3f || into.has(token)) throw new Error(`code page ${page}: token 0x${token.toString(16)} clashes`);
      into.set(token, name);
      added.push(token);
    });
  }
  return added;
}

function build(): CodePage[] {
  return CODE_PAGE_TABLES.map((t) => {
    const tags = new Map<number, string>();
    addRuns(tags, t.runs, t.name);
    const legacy = 'legacy' in t ? addRuns(tags, t.legacy, t.name) : [];
    const tokens = new Map([...tags].map(([token, name]) => [name, token] as const));
    if (tokens.size !== tags.size) throw new Error(`code page ${t.name}: a tag name appears twice`);
    return { page: t.page, name: t.name, namespace: `${t.name}:`, prefix: t.prefix, tags, tokens, legacy: new Set(legacy) };
  });
}

/** Pages 0–25, indexed by page number. */
export const CODE_PAGES: readonly CodePage[] = build();

const BY_NAME = new Map<string, CodePage>(CODE_PAGES.map((p) => [p.name, p]));

/** The page of that number, or undefined. */
export function pageByNumber(page: number): CodePage | undefined {
  return CODE_PAGES[page];
}

/** The page of that name ('AirSync'), or undefined. */
export function pageByName(name: string): CodePage | undefined {
  return BY_NAME.get(name);
}

/** Whether the name is a code page name; narrows to PageName. */
export function isPageName(name: string): name is PageName {
  return BY_NAME.has(name);
}
