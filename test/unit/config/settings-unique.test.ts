// Every settings file under lib/config/settings/ is spread into one schema; a name declared in two
// files would silently win by spread order. This fails instead, and checks every file is wired in.
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { schema } from '../../../lib/config/index.js';

const dir = fileURLToPath(new URL('../../../lib/config/settings/', import.meta.url));

describe('settings declarations', () => {
  it('declare each name once, and every declared name reaches the schema', async () => {
    const seen = new Map<string, string>();
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
      const mod = (await import(`${dir}${file}`)) as Record<string, unknown>;
      for (const value of Object.values(mod)) {
        if (!value || typeof value !== 'object') continue;
        for (const [name, decl] of Object.entries(value)) {
          if (!decl || typeof decl !== 'object' || !('schema' in decl) || !('doc' in decl)) continue;
          expect(seen.get(name), `${name} declared in ${seen.get(name)} and ${file}`).toBeUndefined();
          seen.set(name, file);
          expect(name in schema, `${name} (${file}) is not spread into lib/config/schema.ts`).toBe(true);
        }
      }
    }
    expect(seen.size).toBe(Object.keys(schema).length);
  });
});
