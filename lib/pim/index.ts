export {
  pimResources,
  calendarEventsResource,
  contactsResource,
  notesResource,
  tasksResource,
  taskListsResource,
  contactListsResource,
  calendarShareLinksResource,
} from './resources.js';
export { pimRouter } from './routes.js';
export { eventsToIcs, icsToEvents, occurrences, type EventData } from './ics.js';
export { contactsToVcf, vcfToContacts, type ContactData } from './vcard.js';
export * from './models.js';
export { applyItip, calendarPartsOf, eventRecordOf, type InboundItip } from './invitations.js';
export { respondToInvitation } from './respond.js';
