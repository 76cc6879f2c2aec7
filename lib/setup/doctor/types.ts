import type { Config, SettingName } from '../../config/index.js';

export type CheckStatus = 'ok' | 'warn' | 'fail' | 'skip';

export interface CheckResult {
  id: string;
  title: string;
  status: CheckStatus;
  detail: string;
  /** What to do about a warn or fail, or about a check that could not run (skip). */
  fix?: string;
}

export interface DoctorContext {
  config: Config;
  /** Settings given explicitly (file, environment, --set) rather than left at their default. */
  explicit: ReadonlySet<SettingName>;
  /** Credentials for a test sign-in at the sign-in service (GET /api/auth/password with Basic). */
  signin?: { user: string; password: string };
  nameservers?: string[];
  now?: () => number;
}

export type Check = (ctx: DoctorContext) => Promise<CheckResult | CheckResult[]>;

export const ok = (id: string, title: string, detail: string): CheckResult => ({ id, title, status: 'ok', detail });
export const fail = (id: string, title: string, detail: string, fix: string): CheckResult => ({ id, title, status: 'fail', detail, fix });
export const warn = (id: string, title: string, detail: string, fix: string): CheckResult => ({ id, title, status: 'warn', detail, fix });
export const skip = (id: string, title: string, detail: string, fix?: string): CheckResult =>
  fix ? { id, title, status: 'skip', detail, fix } : { id, title, status: 'skip', detail };
