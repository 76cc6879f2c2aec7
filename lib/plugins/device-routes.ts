import express, { type Router } from 'express';
import { z } from 'zod';
import { defineRoute, type OpenApiRegistry } from '../http/index.js';
import type { Deps } from '../context/index.js';
import {
  deviceView,
  getDevice,
  inspection,
  inspectDevice,
  listDevices,
  remoteWipe,
  removeDevice,
  unblock,
  wipeRequest,
} from './devices.js';

const uid = z.string().min(1).max(64);

/** Spec: /api/mail/devices, with /:uid/remote-wipe and /:uid/unblock (the latter two: trusted role, fresh elevation, audited). */
export function deviceRouter(deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  const tags = ['mail/devices'];
  const params = z.object({ uid });

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/mail/devices',
    operationId: 'devices_list',
    summary:
      'Mobile-sync devices: every device for a trusted role (elevated), else the caller’s own; each with its last sync, policy state and per-folder sync state',
    tags,
    auth: 'signed-in',
    query: z.strictObject({
      userUid: z.string().max(256).optional(),
      mailboxUid: uid.optional(),
      limit: z.coerce.number().int().min(1).max(10_000).optional(),
      page: z.coerce.number().int().min(0).optional(),
    }),
    response: z.array(deviceView),
    handler: async (ctx, { query }) => {
      const all = await listDevices(ctx, query);
      const limit = query.limit ?? 100;
      return all.slice((query.page ?? 0) * limit, ((query.page ?? 0) + 1) * limit);
    },
  });

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/mail/devices/:uid',
    operationId: 'devices_get',
    summary: 'One device (404 when it is not the caller’s and the caller holds no trusted role)',
    tags,
    auth: 'signed-in',
    params,
    response: deviceView,
    handler: (ctx, { params }) => getDevice(ctx, params.uid),
  });

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/mail/devices/:uid/inspect',
    operationId: 'devices_inspect',
    summary:
      'Why a device does not have a message: whether it syncs the folder, its sync key, the filter window and the item’s state in the device’s collection (from sync state and the message’s folder, date and version — never its content)',
    tags,
    auth: 'signed-in',
    params,
    query: z.strictObject({ message: uid.optional() }),
    response: inspection,
    handler: (ctx, { params, query }) => inspectDevice(ctx, params.uid, query.message),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/mail/devices/:uid/remote-wipe',
    operationId: 'devices_remote_wipe',
    summary:
      'Wipe the device at its next Provision exchange (accountOnly: only this account, on 16.1 devices); audited. Once the device acknowledges, it is recorded as wiped and refused until unblocked',
    tags,
    auth: 'trusted-fresh',
    params,
    body: wipeRequest,
    bodyOptional: true,
    response: deviceView,
    handler: (ctx, { params, body }) => remoteWipe(ctx, params.uid, body?.accountOnly ?? false),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/mail/devices/:uid/unblock',
    operationId: 'devices_unblock',
    summary: 'Let a blocked or wiped device sync again: it provisions anew and every folder starts over; audited',
    tags,
    auth: 'trusted-fresh',
    params,
    response: deviceView,
    handler: (ctx, { params }) => unblock(ctx, params.uid),
  });

  defineRoute(router, deps, openapi, {
    method: 'delete',
    path: '/api/mail/devices/:uid',
    operationId: 'devices_delete',
    summary: 'Forget a device and its sync state (its owner; anyone else needs a trusted role with fresh elevation); audited',
    tags,
    auth: 'signed-in',
    params,
    query: z.strictObject({ version: z.coerce.number().int().positive().optional() }),
    status: 204,
    handler: async (ctx, { params }) => removeDevice(ctx, params.uid),
  });
  return router;
}
