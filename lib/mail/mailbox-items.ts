import { z } from 'zod';
import { ApiError, invalid } from '../errors/index.js';
import { defineResource, type ResourceDecl } from '../resources/index.js';
import { type Ctx } from '../context/index.js';
import { sanitizeMailHtml } from '../scan/index.js';
import { defineModel } from '../storage/index.js';
import { FolderModel, type Folder } from './folders.js';
import { ruleAction, ruleCondition, type RuleAction } from './rules.js';

/** A mailbox-scoped resource whose records hang directly off the mailbox (mail ACL and 404 rules). */
const ofMailbox = (decl: Pick<ResourceDecl, 'name' | 'entity' | 'summary' | 'model' | 'hooks'> & Partial<ResourceDecl>): ResourceDecl =>
  defineResource({
    group: 'mail',
    scope: 'mailbox',
    mailboxField: 'mailboxUid',
    parent: { resource: 'mailboxes', field: 'mailboxUid' },
    defaultAcl: [],
    ...decl,
  });

async function uniqueIn(
  ctx: Ctx,
  model: Parameters<Ctx['store']['repo']>[0],
  mailboxUid: string,
  field: string,
  value: unknown,
  selfUid?: string,
): Promise<void> {
  const clash = await ctx.store.repo<Record<string, unknown>>(model).findOne({ mailboxUid, [field]: value as string });
  if (clash && clash.uid !== selfUid) throw new ApiError('api-112', `${field} ${String(value)} is already used in this mailbox`);
}

export const LabelModel = defineModel({
  name: 'label',
  table: 'labels',
  indexes: [{ fields: ['mailboxUid', 'name'] }],
  fields: {
    mailboxUid: z.string().min(1),
    name: z.string().trim().min(1).max(100),
    color: z
      .string()
      .regex(/^#[0-9a-fA-F]{6}$/)
      .nullable()
      .default(null),
  },
});
export const labelsResource = ofMailbox({
  name: 'labels',
  entity: 'label',
  summary: 'Labels a mailbox puts on messages',
  model: LabelModel,
  hooks: {
    async beforeCreate(ctx, data) {
      await uniqueIn(ctx, LabelModel, data.mailboxUid as string, 'name', data.name);
      return data;
    },
    async beforeUpdate(ctx, rec, patch) {
      if (patch.name !== undefined) await uniqueIn(ctx, LabelModel, rec.mailboxUid as string, 'name', patch.name, rec.uid);
      return patch;
    },
  },
});

export const FilterRuleModel = defineModel({
  name: 'mail_filter_rule',
  table: 'mail_filter_rules',
  indexes: [{ fields: ['mailboxUid', 'position'] }],
  fields: {
    mailboxUid: z.string().min(1),
    name: z.string().trim().max(200).default(''),
    /** Rules run in ascending position. */
    position: z.number().int().nonnegative().default(0),
    enabled: z.boolean().default(true),
    match: z.enum(['all', 'any']).default('all'),
    conditions: z.array(ruleCondition).max(20).default([]),
    actions: z.array(ruleAction).min(1).max(10),
    stop: z.boolean().default(false),
  },
});

/** A rule naming a folder or label that is not in the same mailbox is refused with a clear error. */
async function checkTargets(ctx: Ctx, mailboxUid: string, actions: RuleAction[]): Promise<void> {
  for (const [i, a] of actions.entries()) {
    if (a.type === 'move' || a.type === 'copy') {
      const f = await ctx.store.repo<Folder>(FolderModel).get(a.folderUid);
      if (!f || f.mailboxUid !== mailboxUid)
        throw invalid(`actions.${i}: no folder ${a.folderUid} in this mailbox`, [
          { path: `actions.${i}.folderUid`, message: 'unknown folder' },
        ]);
    }
    if (a.type === 'label') {
      const l = await ctx.store.repo<{ mailboxUid: string }>(LabelModel).get(a.labelUid);
      if (!l || l.mailboxUid !== mailboxUid)
        throw invalid(`actions.${i}: no label ${a.labelUid} in this mailbox`, [
          { path: `actions.${i}.labelUid`, message: 'unknown label' },
        ]);
    }
  }
}

export const filterRulesResource = ofMailbox({
  name: 'mail-filter-rules',
  entity: 'mailFilterRule',
  summary:
    'Filter rules run in position order on delivered mail that is not junk (conditions from, to/cc, subject, header, size, has-attachment; actions move, copy, mark read, delete, forward, label)',
  model: FilterRuleModel,
  hooks: {
    async beforeCreate(ctx, data) {
      await checkTargets(ctx, data.mailboxUid as string, data.actions as RuleAction[]);
      return data;
    },
    async beforeUpdate(ctx, rec, patch) {
      if (patch.actions) await checkTargets(ctx, rec.mailboxUid as string, patch.actions as RuleAction[]);
      return patch;
    },
  },
});

export const SignatureModel = defineModel({
  name: 'mail_signature',
  table: 'mail_signatures',
  indexes: [{ fields: ['mailboxUid'] }],
  fields: {
    mailboxUid: z.string().min(1),
    name: z.string().trim().min(1).max(100),
    text: z.string().max(10_000).default(''),
    html: z.string().max(50_000).default(''),
    isDefault: z.boolean().default(false),
  },
});
const cleanHtml = (data: Record<string, unknown>) =>
  typeof data.html === 'string' ? { ...data, html: sanitizeMailHtml(data.html) } : data;
export const signaturesResource = ofMailbox({
  name: 'mail-signatures',
  entity: 'mailSignature',
  summary: 'Signatures inserted by compose; HTML is sanitized on write',
  model: SignatureModel,
  hooks: { beforeCreate: (_c, data) => cleanHtml(data), beforeUpdate: (_c, _r, patch) => cleanHtml(patch) },
});

export const FocusedOverrideModel = defineModel({
  name: 'focused_override',
  table: 'focused_overrides',
  indexes: [{ fields: ['mailboxUid', 'sender'] }],
  fields: {
    mailboxUid: z.string().min(1),
    /** An address, or @domain for everyone at a domain. */
    sender: z
      .string()
      .trim()
      .toLowerCase()
      .regex(/^([^\s@]+@[^\s@]+|@[^\s@]+)$/, 'an address or @domain'),
    classification: z.enum(['focused', 'other']),
  },
});
export const focusedOverridesResource = ofMailbox({
  name: 'focused-inbox-overrides',
  entity: 'focusedInboxOverride',
  summary: 'Always Focused or always Other for a sender or a domain (checked before any heuristic)',
  model: FocusedOverrideModel,
  hooks: {
    async beforeCreate(ctx, data) {
      await uniqueIn(ctx, FocusedOverrideModel, data.mailboxUid as string, 'sender', data.sender);
      return data;
    },
  },
});

export const AppearanceModel = defineModel({
  name: 'appearance_preferences',
  table: 'appearance_preferences',
  indexes: [{ fields: ['mailboxUid'], unique: true }],
  fields: {
    mailboxUid: z.string().min(1),
    theme: z.enum(['system', 'light', 'dark']).default('system'),
    density: z.enum(['comfortable', 'compact']).default('comfortable'),
    readingPane: z.enum(['right', 'bottom', 'off']).default('right'),
    conversationView: z.boolean().default(true),
    language: z
      .string()
      .regex(/^[a-z]{2,3}(-[A-Z]{2})?$/)
      .nullable()
      .default(null),
  },
});
export const appearanceResource = ofMailbox({
  name: 'preferences/appearance',
  entity: 'appearancePreferences',
  summary: 'How the web app looks for a mailbox (one record per mailbox)',
  model: AppearanceModel,
  hooks: {
    async beforeCreate(ctx, data) {
      await uniqueIn(ctx, AppearanceModel, data.mailboxUid as string, 'mailboxUid', data.mailboxUid);
      return data;
    },
  },
});

export const mailboxItemResources = [labelsResource, filterRulesResource, signaturesResource, focusedOverridesResource, appearanceResource];
