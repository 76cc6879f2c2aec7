// The escrow records the console reads (the fields it uses; the API sends more).

export interface Scope {
  uid: string;
  version: number;
  name: string;
  certificatePem: string;
  holders: string[];
  approvalsRequired: number;
}

export interface Matter {
  uid: string;
  version: number;
  name: string;
  description: string;
  scopeUid: string;
  custodians: string[];
  from: string;
  to: string;
  state: 'open' | 'closed';
}

export interface AccessRequest {
  uid: string;
  version: number;
  matterUid: string;
  reason: string;
  requester: string;
  scopeUid: string;
  state: 'pending' | 'approved' | 'withdrawn' | 'closed';
  createdAt: string;
}

export interface Decisions {
  state: AccessRequest['state'];
  holders: string[];
  approvalsRequired: number;
  approvalTtlHours: number;
  valid: number;
  approvals: Array<{ holder: string; approvedAt: string; expiresAt: string; counts: 'valid' | 'expired' | 'not-a-holder' }>;
  declines: Array<{ holder: string; reason: string; declinedAt: string }>;
}

export interface MatterExport {
  uid: string;
  accessRequestUid: string;
  matterUid: string;
  requester: string;
  state: 'pending' | 'ready' | 'failed' | 'expired';
  messageCount: number | null;
  mboxSize: number | null;
  mboxSha256: string | null;
  readyAt: string | null;
  expiresAt: string | null;
  createdAt: string;
}
