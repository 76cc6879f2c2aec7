// The API records the mail app reads (the fields it uses; the API sends more).

export interface Mailbox {
  uid: string;
  address: string;
  name: string;
  aliases: string[];
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

export interface Address {
  name: string;
  address: string;
}

export interface Attachment {
  id: string;
  safeFilename: string;
  contentType: string;
  size: number;
  inline: boolean;
}

export interface Message {
  uid: string;
  version: number;
  mailboxUid: string;
  folderUid: string;
  subject: string;
  from: Address | null;
  fromAddress: string;
  to: Address[];
  cc: Address[];
  bcc: Address[];
  date: string;
  seen: boolean;
  flagged: boolean;
  draft: boolean;
  hasAttachments: boolean;
  attachments: Attachment[];
  sendAt: string | null;
  labels: string[];
  threadId: string;
  /** S/MIME: the stored message is ciphertext (encrypted) or carries a signature (signed). */
  smime?: 'encrypted' | 'signed' | null;
  preview?: string;
  /** A row of a conversation list: the conversation's messages in the folder and how many are unread. */
  thread?: { count: number; unread: number };
}

export interface MessageBody {
  encrypted: boolean;
  text: string | null;
  html: string | null;
  senderVerified: boolean;
  safeSender: boolean;
  /** Where the read receipt its sender asked for stands; null: none asked for. */
  receipt: 'not-read' | 'pending' | 'ask' | 'approved' | 'sent' | 'declined' | null;
}
