// escape-html's entities (&amp; &lt; &gt; &quot; &#39;) are XML's too.
import escapeHtml from 'escape-html';
import { MOBILESYNC_RESPONSE, OUTLOOK_RESPONSE } from './request.js';

// The XML answers. Written out rather than built generically: each is a fixed shape from the
// published examples (MS-ASCMD 4.2.1, MS-OXDSCLI 4.4) and the tests validate them with xmllint
// against AutodiscoverResponse.xsd / AutodiscoverMobileSync.xsd and the Outlook response schema.

export const RESPONSE_NS = 'http://schemas.microsoft.com/exchange/autodiscover/responseschema/2006';

const doc = (inner: string) => `<?xml version="1.0" encoding="utf-8"?>\n<Autodiscover xmlns="${RESPONSE_NS}">\n${inner}\n</Autodiscover>\n`;

/**
 * Mobile sync settings (MS-ASCMD 2.2.1.1): one MobileSync server. The display name is the address
 * the caller sent: no user is ever looked up (Spec: Autodiscover plugin — no enumeration).
 */
export function mobileSyncAnswer(email: string, url: string): string {
  return doc(
    [
      `  <Response xmlns="${MOBILESYNC_RESPONSE}">`,
      '    <Culture>en:us</Culture>',
      '    <User>',
      `      <DisplayName>${escapeHtml(email)}</DisplayName>`,
      `      <EMailAddress>${escapeHtml(email)}</EMailAddress>`,
      '    </User>',
      '    <Action>',
      '      <Settings>',
      '        <Server>',
      '          <Type>MobileSync</Type>',
      `          <Url>${escapeHtml(url)}</Url>`,
      `          <Name>${escapeHtml(url)}</Name>`,
      '        </Server>',
      '      </Settings>',
      '    </Action>',
      '  </Response>',
    ].join('\n'),
  );
}

export interface MapiEndpoints {
  emsmdb: string;
  nspi: string;
}

/** The Outlook schema with a mapiHttp protocol (MS-OXDSCLI 2.2.4.1.1.2.6, example 4.4); internal and external URLs are the public ones. */
export function outlookAnswer(email: string, mapi: MapiEndpoints): string {
  const urls = (u: string) => [
    `          <InternalUrl>${escapeHtml(u)}</InternalUrl>`,
    `          <ExternalUrl>${escapeHtml(u)}</ExternalUrl>`,
  ];
  return doc(
    [
      `  <Response xmlns="${OUTLOOK_RESPONSE}">`,
      '    <User>',
      `      <DisplayName>${escapeHtml(email)}</DisplayName>`,
      `      <AutoDiscoverSMTPAddress>${escapeHtml(email)}</AutoDiscoverSMTPAddress>`,
      '    </User>',
      '    <Account>',
      '      <AccountType>email</AccountType>',
      '      <Action>settings</Action>',
      '      <Protocol Type="mapiHttp" Version="1">',
      '        <MailStore>',
      ...urls(mapi.emsmdb),
      '        </MailStore>',
      '        <AddressBook>',
      ...urls(mapi.nspi),
      '        </AddressBook>',
      '      </Protocol>',
      '    </Account>',
      '  </Response>',
    ].join('\n'),
  );
}

/**
 * The answer when nothing can be offered for the schema asked for: ErrorCode 601, "a provider
 * could not be found to handle the AcceptableResponseSchema" (MS-ASCMD 2.2.3.64), in the generic
 * response form of AutodiscoverResponse.xsd. No Time or Id attribute: the answer must not differ
 * from one request (or one address) to the next.
 */
export function providerUnavailable(): string {
  return doc(
    [
      '  <Response>',
      '    <Error>',
      '      <ErrorCode>601</ErrorCode>',
      '      <Message>Provider is not available</Message>',
      '    </Error>',
      '  </Response>',
    ].join('\n'),
  );
}
