import { isApiError, type PluginResponse } from '../api.js';
import type { EasCommand, EasRequest } from './command.js';
import { kids, textOf, wbxml } from './protocol.js';
import { ns, type WbxmlElement } from './wbxml/index.js';

// MeetingResponse (MS-ASCMD 2.2.1.11): accept, tentatively accept or decline a meeting request,
// named by the invitation message in a mail folder or by the event in the calendar. The answer is
// the web app's (the event's PARTSTAT, an iTIP REPLY to the organizer).

const mr = ns('MeetingResponse');

/** MeetingResponse Status values: 1 success, 2 invalid request, 3 mailbox error, 4 server error. */
const STATUS = { ok: 1, invalid: 2, mailbox: 3, server: 4 } as const;
const RESPONSES = { 1: 'accepted', 2: 'tentative', 3: 'declined' } as const;

async function answerOne(r: EasRequest, req: WbxmlElement): Promise<WbxmlElement> {
  const id = textOf(req, 'RequestId') ?? '';
  const response = RESPONSES[Number(textOf(req, 'UserResponse')) as keyof typeof RESPONSES];
  const result = (status: number, calendarId?: string) =>
    mr('Result', [mr('RequestId', id), mr('Status', status), ...(calendarId ? [mr('CalendarId', calendarId)] : [])]);
  if (!id || !response) return result(STATUS.invalid);
  try {
    const { eventUid } = await r.caller.answerInvitation(id, response);
    // A declined meeting has no calendar item on the device (MS-ASCMD: CalendarId only when accepted or tentative).
    return result(STATUS.ok, response === 'declined' ? undefined : eventUid);
  } catch (e) {
    if (!isApiError(e)) throw e;
    return result(e.status === 404 || e.status === 400 ? STATUS.invalid : STATUS.mailbox);
  }
}

async function handle(r: EasRequest): Promise<PluginResponse> {
  const requests = kids(r.body ?? undefined, 'Request');
  const out: WbxmlElement[] = [];
  for (const req of requests) out.push(await answerOne(r, req));
  return wbxml(mr('MeetingResponse', out.length ? out : [mr('Result', [mr('Status', STATUS.invalid)])]));
}

export const meetingResponse: EasCommand = { root: { page: 'MeetingResponse', tag: 'MeetingResponse' }, handle };
