// Each model as a mongoose Schema and model on the connection (its fields' BSON types, `_id` a
// string, no `__v`, no auto-indexing, the indexes of schema.ts declared). Only the document backend's
// open loads this file, and with it mongoose: the SQL backend's daemons never pay for it.
import mongoose from 'mongoose';
import type { ColumnKind, ModelDef } from '../model.js';
import { indexSpecs } from './schema.js';
import { VALUES_FIELD, WORDS_FIELD } from './shape.js';

const SCHEMA_TYPE: Record<ColumnKind, unknown> = {
  text: String,
  integer: Number,
  number: Number,
  boolean: Boolean,
  date: Date,
  json: String,
  bytes: Buffer,
};

/** The mongoose Schema of a model (collection = model.table; indexes declared, built by synchronize). */
export function schemaOf(model: ModelDef): mongoose.Schema {
  const fields: Record<string, unknown> = {
    _id: String,
    version: Number,
    createdAt: Date,
    updatedAt: Date,
    [VALUES_FIELD]: mongoose.Schema.Types.Mixed,
    [WORDS_FIELD]: [String],
  };
  for (const [f, c] of Object.entries(model.columns)) fields[f] = SCHEMA_TYPE[c.kind];
  if (model.lease) Object.assign(fields, { claimedBy: String, leaseUntil: Date });
  const schema = new mongoose.Schema(fields, {
    collection: model.table,
    versionKey: false,
    autoIndex: false,
    autoCreate: false,
    strict: false,
  });
  for (const spec of indexSpecs(model)) {
    const { key, ...options } = spec;
    schema.index(key, options);
  }
  return schema;
}
