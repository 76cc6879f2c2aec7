import type { z } from 'zod';
import type { AclGrant } from '../acl/index.js';
import type { Ctx } from '../context/index.js';
import type { ModelDef, Row, SortKey } from '../storage/index.js';

export const OPERATIONS = ['list', 'head', 'get', 'create', 'update', 'updateProperty', 'bulkUpdate', 'delete', 'bulkDelete'] as const;
export type Operation = (typeof OPERATIONS)[number];
export const WRITE_OPERATIONS: readonly Operation[] = ['create', 'update', 'updateProperty', 'bulkUpdate', 'delete', 'bulkDelete'];

export type AnyRecord = Row<Record<string, unknown>>;

export interface Hooks {
  /** Runs before the insert; may change or complete the data (throw a catalogue error to refuse). */
  beforeCreate?(
    ctx: Ctx,
    data: Record<string, unknown>,
    input: Record<string, unknown>,
  ): Promise<Record<string, unknown>> | Record<string, unknown>;
  /** Runs after the insert, in the same transaction (create child records, ACL entries). */
  afterCreate?(ctx: Ctx, rec: AnyRecord, input: Record<string, unknown>): Promise<void> | void;
  beforeUpdate?(ctx: Ctx, rec: AnyRecord, patch: Record<string, unknown>): Promise<Record<string, unknown>> | Record<string, unknown>;
  afterUpdate?(ctx: Ctx, before: AnyRecord, after: AnyRecord): Promise<void> | void;
  beforeDelete?(ctx: Ctx, rec: AnyRecord): Promise<void> | void;
  afterDelete?(ctx: Ctx, rec: AnyRecord): Promise<void> | void;
  /** After the write committed (events about other records, freeing files): never inside the transaction. */
  afterCommit?(ctx: Ctx, action: 'create' | 'update' | 'delete', before: AnyRecord | null, after: AnyRecord | null): Promise<void> | void;
}

/**
 * A resource, declared once: it yields validation, access checks, the generic routes of the spec
 * and their OpenAPI description (Spec: Generic resource routes).
 */
export interface ResourceDecl {
  /** URL group: /api/<group>/<name>; '' for /api/<name>. */
  group: 'mail' | 'system' | 'escrow' | 'admin' | '';
  name: string;
  /** Entity type name used in push events and OpenAPI (singular). */
  entity: string;
  summary: string;
  model: ModelDef;
  /**
   * mailbox: records belong to a mailbox; checks strip trusted roles and invisible records answer
   * 404. global: deployment records; trusted roles count (in elevated tokens).
   */
  scope: 'mailbox' | 'global';
  /** mailbox scope: the field holding the mailbox uid ('uid' for the mailboxes resource itself). */
  mailboxField?: string;
  /**
   * global scope: narrows what a caller sees beyond the class ACL, as field -> the values allowed
   * (the escrow records: the scopes the caller holds). Lists and counts are narrowed; a record
   * outside answers 404 on read, update and delete, exactly like a missing one.
   */
  visibleTo?(ctx: Ctx): Promise<Record<string, string[]>>;
  /** Who may use the records beyond the ACL (the rules of visibleTo and the hooks): appended to every route's OpenAPI description. */
  accessNote?: string;
  /** ACL inheritance and the create right: a folder's parent is its mailbox. */
  parent?: { resource: string; field: string };
  /** Class default grants, added to every record's own and inherited entries. */
  defaultAcl: AclGrant[];
  /** Who may create records with no parent (checked with trusted roles counting). */
  createAcl?: AclGrant[];
  operations?: Operation[];
  /**
   * The order of a list without ?sort= (default: by uid, which is creation order). Ties are broken
   * by uid in the direction of the first key, so pages never overlap or skip a record.
   */
  defaultSort?: SortKey[];
  /** Operations that need a trusted role with fresh elevation (Spec: Roles and elevation). */
  sensitive?: readonly Operation[];
  /** Kept by the server: never accepted from clients. */
  serverFields?: string[];
  /** Accepted on create only. */
  immutableFields?: string[];
  /**
   * Changed only by an administrator with ?scope=admin (trusted role, fresh elevation, audited),
   * never by the owner; for instance a mailbox's aliases and quota.
   */
  adminFields?: string[];
  /** Never returned. */
  hiddenFields?: string[];
  /** Extra create-only input that is not a column (for instance a mailbox's owners). */
  createInput?: z.ZodRawShape;
  /** Write every change to the audit log. */
  audit?: boolean;
  /** Channels an event about this record goes to (default: its uid and its parent's uid). */
  eventChannels?(rec: AnyRecord): string[];
  /** ?scope=admin: administrative details only (needs a trusted role and fresh elevation; audited). */
  adminView?(ctx: Ctx, rec: AnyRecord): Promise<Record<string, unknown>>;
  /** Shapes a record for output (after hidden fields are dropped). */
  view?(rec: Record<string, unknown>): Record<string, unknown>;
  hooks?: Hooks;
}

export function defineResource(decl: ResourceDecl): ResourceDecl {
  if (decl.scope === 'mailbox' && !decl.mailboxField) throw new Error(`resource ${decl.name}: mailbox scope needs mailboxField`);
  return decl;
}

export function pathOf(decl: Pick<ResourceDecl, 'group' | 'name'>): string {
  return decl.group ? `/api/${decl.group}/${decl.name}` : `/api/${decl.name}`;
}

export function operationsOf(decl: ResourceDecl): readonly Operation[] {
  return decl.operations ?? OPERATIONS;
}
