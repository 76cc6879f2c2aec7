import type { z } from 'zod';

/** One setting: its name (a:b:c), type, default and one-line doc. The single source of truth. */
export interface SettingDecl<S extends z.ZodType = z.ZodType> {
  schema: S;
  default?: z.infer<S>;
  doc: string;
  /** Never printed in full by `svcmail config get` or logs. */
  secret?: boolean;
  /** Required outside development (NODE_ENV dev, development, test). */
  requiredInProduction?: boolean;
}

export function setting<S extends z.ZodType>(schema: S, opts: Omit<SettingDecl<S>, 'schema'>): SettingDecl<S> {
  return { schema, ...opts };
}
