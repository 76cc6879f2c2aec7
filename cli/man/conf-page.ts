import { z } from 'zod';
import { schema, type SettingDecl } from '../../lib/config/index.js';
import { esc, para, pre, type Page } from './roff.js';

/** A setting's type in words, from its zod schema. */
export function typeOf(decl: SettingDecl): string {
  const js = z.toJSONSchema(decl.schema, { unrepresentable: 'any', io: 'input' }) as Record<string, unknown>;
  const one = (s: Record<string, unknown>): string => {
    if (s.const !== undefined) return JSON.stringify(s.const);
    if (Array.isArray(s.enum)) return `one of ${(s.enum as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    if (Array.isArray(s.anyOf)) return (s.anyOf as Record<string, unknown>[]).map(one).join(' or ');
    if (s.type === 'array') return `list of ${s.items ? one(s.items as Record<string, unknown>) : 'values'}`;
    if (s.type === 'string' && s.format === 'uri') return 'URL';
    if (s.type === 'integer') return s.minimum !== undefined || s.exclusiveMinimum !== undefined ? 'integer (positive)' : 'integer';
    if (s.type === 'object') return 'object';
    return String(s.type ?? 'value');
  };
  return one(js);
}

export function confPage(): Page {
  const entries = Object.entries(schema) as [string, SettingDecl][];
  const body: string[] = [];
  for (const [name, decl] of entries.sort(([a], [b]) => a.localeCompare(b))) {
    const dflt = decl.default === undefined ? '(none)' : JSON.stringify(decl.default);
    body.push('.TP', `.B ${esc(name)}`, esc(decl.doc), '.br', `Type: ${esc(typeOf(decl))}.`, '.br', `Default: ${esc(dflt)}.`);
    const flags = [
      decl.secret ? 'secret: masked by svcmail config get' : '',
      decl.requiredInProduction ? 'required outside development' : '',
    ].filter(Boolean);
    if (flags.length) body.push('.br', `${esc(flags.join('; '))}.`);
    body.push('.br', `Environment: ${esc(`SVCMAIL__${name.split(':').join('__')}`)}.`);
  }
  return {
    name: 'svcmail.conf',
    section: 5,
    summary: 'configuration of the svcmail mail-server appliance',
    sections: [
      { title: 'Synopsis', body: ['/etc/svcmail/svcmail.conf'] },
      {
        title: 'Description',
        body: [
          ...para(
            'A JSON object. Keys are setting names written a:b:c (flat), or the same names nested as objects. Unknown names are refused at start with one line naming them. Every daemon and the svcmail command read the same file (--config FILE or SVCMAIL_CONFIG; the packaged path is /etc/svcmail/svcmail.conf).',
          ),
          ...para(
            'Later sources win: built-in defaults, the file, SVCMAIL__a__b__c environment variables, then --set a:b:c=value. svcmail setup writes the file (mode 0640); svcmail config set changes one setting after validating it; svcmail config check validates the whole.',
          ),
          ...pre([
            '{',
            '  "mail:host": "mail.example.org",',
            '  "auth:secret": "…",',
            '  "datastores:sql:url": "postgres://svcmail@127.0.0.1/svcmail"',
            '}',
          ]),
        ],
      },
      {
        title: 'Settings',
        body: [...para(`${entries.length} settings, generated from the configuration schema (lib/config/schema.ts).`), ...body],
      },
      { title: 'See also', body: ['.BR svcmail (1),', '.BR svcmail\\-setup (1),', '.BR svcmail\\-doctor (1)'] },
    ],
  };
}
