import { z } from 'zod';
import type { AclGrant } from '../acl/index.js';

/** Class default for deployment records: the trusted admin role (which counts only when elevated). */
export const ADMIN_ONLY: AclGrant[] = [{ subject: 'role:admin', rights: ['owner'] }];

export const domainName = z
  .string()
  .trim()
  .toLowerCase()
  .max(253)
  .regex(
    /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,61}[a-z0-9]$|^localhost$/,
    'must be a domain name such as example.org',
  );
