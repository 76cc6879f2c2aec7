// The API records the mail app reads (the fields it uses; the API sends more).

export interface Mailbox {
  uid: string;
  address: string;
}

export interface Folder {
  uid: string;
  name: string;
  role: string | null;
  parentUid: string | null;
  unreadCount: number;
  totalCount: number;
  version: number;
}

export interface Message {
  uid: string;
  version: number;
  folderUid: string;
  subject: string;
  from: { name: string; address: string } | null;
  fromAddress: string;
  date: string;
  seen: boolean;
  flagged: boolean;
  hasAttachments: boolean;
  preview?: string;
}

export interface MessageBody {
  encrypted: boolean;
  text: string | null;
  html: string | null;
}
