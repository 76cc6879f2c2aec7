import type { DataSource, EntityManager } from 'typeorm';
import type { ModelDef } from '../model.js';
import type { SqlDialect } from './entities.js';
import { documentText } from '../terms.js';

// Full-text documents of a model live beside its table: an FTS5 virtual table on SQLite, a
// tsvector column with a GIN index on PostgreSQL. Both hold (uid, document); search joins on uid.

export const ftsTable = (model: ModelDef): string => `"${model.table}_fts"`;
const keysTable = (model: ModelDef): string => `"${model.table}_fts_keys"`;

/** Creates the full-text table of each full-text model once (idempotent, safe when several processes start). */
export async function ensureFullText(ds: DataSource, dialect: SqlDialect, models: ModelDef[]): Promise<void> {
  for (const m of models.filter((x) => x.fullText)) {
    const t = ftsTable(m);
    const statements =
      dialect === 'sqlite'
        ? [
            `CREATE VIRTUAL TABLE IF NOT EXISTS ${t} USING fts5(uid UNINDEXED, doc, tokenize = 'unicode61 remove_diacritics 2')`,
            // uid → FTS rowid: an UNINDEXED column is found only by scanning the whole table (tens of ms per
            // message at 100 000), so replace and delete go through this key table instead.
            `CREATE TABLE IF NOT EXISTS ${keysTable(m)} (id INTEGER PRIMARY KEY, uid TEXT NOT NULL UNIQUE)`,
            `INSERT OR IGNORE INTO ${keysTable(m)} (id, uid) SELECT rowid, uid FROM ${t} WHERE NOT EXISTS (SELECT 1 FROM ${keysTable(m)})`,
          ]
        : [
            `CREATE TABLE IF NOT EXISTS ${t} (uid varchar(64) PRIMARY KEY, doc tsvector NOT NULL)`,
            `CREATE INDEX IF NOT EXISTS "${m.table}_fts_doc" ON ${t} USING gin (doc)`,
          ];
    for (const sql of statements) {
      try {
        await ds.query(sql);
      } catch (e) {
        // Another process created it between our check and our create (PostgreSQL catalog race).
        if (!/already exists|duplicate key/i.test(String((e as Error).message))) throw e;
      }
    }
  }
}

/**
 * Several documents: on PostgreSQL one INSERT … SELECT FROM unnest(…) per 1 000 (one round trip
 * instead of one per document: a scan round writes its copies' documents together); on SQLite
 * one setText after another (statements on the store's connection, no round trips).
 */
export async function setTexts(manager: EntityManager, dialect: SqlDialect, model: ModelDef, docs: Map<string, string>): Promise<void> {
  if (dialect === 'sqlite') {
    for (const [uid, raw] of docs) await setText(manager, dialect, model, uid, raw);
    return;
  }
  const all = [...docs];
  for (let i = 0; i < all.length; i += 1000) {
    const chunk = all.slice(i, i + 1000);
    // Each distinct text is made a tsvector once (MATERIALIZED: not once per row that uses it): a
    // message filed to several mailboxes has one document per copy, the same text each time, and
    // to_tsvector is most of what this statement costs the server.
    const texts = new Map<string, number>();
    const which = chunk.map(([, raw]) => {
      const text = documentText(raw);
      let n = texts.get(text);
      if (n === undefined) texts.set(text, (n = texts.size + 1));
      return n;
    });
    await manager.query(
      `WITH v AS MATERIALIZED (SELECT n, to_tsvector('simple', d) AS doc FROM unnest($3::text[]) WITH ORDINALITY AS y(d, n))
       INSERT INTO ${ftsTable(model)} (uid, doc) SELECT x.u, v.doc FROM unnest($1::varchar[], $2::int[]) AS x(u, n) JOIN v ON v.n = x.n
       ON CONFLICT (uid) DO UPDATE SET doc = EXCLUDED.doc`,
      [chunk.map(([uid]) => uid), which, [...texts.keys()]],
    );
  }
}

export async function setText(manager: EntityManager, dialect: SqlDialect, model: ModelDef, uid: string, raw: string): Promise<void> {
  const t = ftsTable(model);
  const text = documentText(raw);
  if (dialect === 'sqlite') {
    const k = keysTable(model);
    // The key's rowid (new or kept), then the document under it: FTS5 honours OR REPLACE on rowid.
    // Not one INSERT … RETURNING: a statement with RETURNING (or DO UPDATE) opens a statement
    // savepoint, and FTS5 writes its pending documents to disk at every savepoint — each document
    // would become a segment of its own instead of one per transaction (more CPU per document and a
    // dearer COMMIT; figures in bench/README.md). A plain insert and a select leave them pending.
    await manager.query(`INSERT INTO ${k} (uid) VALUES (?) ON CONFLICT (uid) DO NOTHING`, [uid]);
    const [{ id }] = (await manager.query(`SELECT id FROM ${k} WHERE uid = ?`, [uid])) as Array<{ id: number }>;
    await manager.query(`INSERT OR REPLACE INTO ${t} (rowid, uid, doc) VALUES (?, ?, ?)`, [id, uid, text]);
  } else {
    await manager.query(
      `INSERT INTO ${t} (uid, doc) VALUES ($1, to_tsvector('simple', $2)) ON CONFLICT (uid) DO UPDATE SET doc = EXCLUDED.doc`,
      [uid, text],
    );
  }
}

export async function dropText(manager: EntityManager, dialect: SqlDialect, model: ModelDef, uids: string[]): Promise<void> {
  const t = ftsTable(model);
  for (let i = 0; i < uids.length; i += 500) {
    const chunk = uids.slice(i, i + 500);
    const ph = chunk.map((_, j) => (dialect === 'sqlite' ? '?' : `$${j + 1}`)).join(', ');
    if (dialect === 'sqlite') {
      await manager.query(`DELETE FROM ${t} WHERE rowid IN (SELECT id FROM ${keysTable(model)} WHERE uid IN (${ph}))`, chunk);
      await manager.query(`DELETE FROM ${keysTable(model)} WHERE uid IN (${ph})`, chunk);
    } else {
      await manager.query(`DELETE FROM ${t} WHERE uid IN (${ph})`, chunk);
    }
  }
}

/** `uid IN (…matching documents…)` for a WHERE clause; the words become parameters. */
export function matchClause(dialect: SqlDialect, model: ModelDef, words: string[], ph: (v: unknown) => string): string {
  const t = ftsTable(model);
  if (dialect === 'sqlite') return `"uid" IN (SELECT uid FROM ${t} WHERE ${t} MATCH ${ph(words.map((w) => `"${w}"*`).join(' '))})`;
  return `"uid" IN (SELECT uid FROM ${t} WHERE doc @@ to_tsquery('simple', ${ph(words.map((w) => `${w}:*`).join(' & '))}))`;
}
