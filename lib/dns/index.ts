export {
  checklistFor,
  dkimKeyData,
  svcTxt,
  txtChunks,
  zoneLine,
  type ChecklistItem,
  type DomainDnsInput,
  type RecordType,
} from './checklist.js';
export { checkItems, tags, type CheckedItem, type RecordStatus } from './check.js';
export { lookup, nameservers, parseNameserver, type LookupAnswer, type Nameserver } from './lookup.js';
export { dnsChecklist, dnsInputs } from './source.js';
export { dnsChecklistRouter } from './routes.js';
export { describeVerdicts, verdicts, type DomainVerdict } from './verdicts.js';
export { verifyCheckedDomains } from './verify.js';
