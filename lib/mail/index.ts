export { mailboxesResource, MailboxModel, mailboxFields, emailAddress, onSenderList, type Mailbox } from './mailboxes.js';
export {
  foldersResource,
  FolderModel,
  folderFields,
  SYSTEM_FOLDERS,
  FOLDER_ROLES,
  createSystemFolders,
  type Folder,
  type FolderRole,
} from './folders.js';
export { AddressModel, syncAddresses } from './addresses.js';
export { MessageModel, messageFields, parseMessage, parseMail, fromParsedMail, type Message, type ParsedMessage } from './messages.js';
export { displayBody, displayBodyByMailparser, type DisplayBody } from './display-body.js';
export {
  storeRaw,
  loadRaw,
  freeRaw,
  fileMessage,
  exceedsQuota,
  wouldExceedQuota,
  folderOf,
  blobsOf,
  publishFolder,
  publishMessage,
  type FileRequest,
  type StoredRaw,
  type MessageRecord,
} from './filing.js';
export { messagesResource, moveMessage, unfile } from './messages-resource.js';
export { messageRouter } from './message-routes.js';
export { messageActions, openAttachment, type MessageActions } from './message-actions.js';
export {
  evaluateRules,
  ruleAction,
  ruleCondition,
  type FilterRule,
  type RuleInput,
  type RuleActions,
  type RuleAction,
  type RuleCondition,
} from './rules.js';
export {
  mailboxItemResources,
  labelsResource,
  filterRulesResource,
  signaturesResource,
  focusedOverridesResource,
  appearanceResource,
  FilterRuleModel,
  LabelModel,
  FocusedOverrideModel,
} from './mailbox-items.js';
export { ReadReceiptModel, RECEIPT_STATES, noteReceiptOwed, receiptUid, type ReadReceipt } from './receipts.js';
export { searchFor, searchMessages, searchDocument, searchQuery, type SearchQuery } from './search.js';
export { searchRouter } from './search-routes.js';
export { threadRouter } from './thread-routes.js';
export { mailboxOwnersRouter, setOwners } from './mailbox-owners.js';
export { ThreadModel, type Thread } from './threads.js';
export type { OutboundHook, OutboundKind, OutboundMessage } from './outbound-port.js';
export { directory, directoryRouter, type DirectoryEntry } from './directory.js';
export { composeRouter } from './compose-routes.js';
export { buildDraft, draftBody, parseEncryptedDraft, fileDraft, mailboxFor, type DraftBody, type ComposeDecls } from './compose.js';
export { KeyDirectoryModel, discoveryHash, splitAddress, syncDirectory, type KeyDirectoryEntry } from './key-directory.js';
export { ErasedAddressModel, checkNotErased, type ErasedAddress } from './tombstones.js';
export { DistributionListModel, distributionListFields, type DistributionList } from './lists.js';
export { fromLine, mboxEntry, mboxrdQuote, mboxrdUnquote, splitMbox, type MboxItem } from './mbox.js';
