// Validation with xmllint against the published Autodiscover response schemas
// (../shared/fixtures/ms-eas-schemas: AutodiscoverResponse.xsd, AutodiscoverMobileSync.xsd) and the
// Outlook response schema (test/fixtures/autodiscover). The shared AutodiscoverResponse.xsd lacks the
// xs:import its published form has (MS-ASCMD 6.4); it is added here, and for the Outlook schema the
// envelope's choice also admits the Outlook Response.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { programPath } from '../../helpers/peers.js';

const SHARED = fileURLToPath(new URL('../../../../shared/fixtures/ms-eas-schemas/', import.meta.url));
const OUTLOOK_XSD = fileURLToPath(new URL('../../fixtures/autodiscover/AutodiscoverOutlookResponse.xsd', import.meta.url));
const MS = 'http://schemas.microsoft.com/exchange/autodiscover/mobilesync/responseschema/2006';
const OL = 'http://schemas.microsoft.com/exchange/autodiscover/outlook/responseschema/2006a';

// A test file that validates asks requirePrograms('xmllint') first (a line and a skip when it is missing).
const XMLLINT = programPath('xmllint');

let dir: string | null = null;
function schemas(): { mobilesync: string; outlook: string } {
  if (!dir) {
    dir = mkdtempSync(join(tmpdir(), 'svcmail-xsd-'));
    copyFileSync(join(SHARED, 'AutodiscoverMobileSync.xsd'), join(dir, 'AutodiscoverMobileSync.xsd'));
    copyFileSync(OUTLOOK_XSD, join(dir, 'AutodiscoverOutlookResponse.xsd'));
    const envelope = readFileSync(join(SHARED, 'AutodiscoverResponse.xsd'), 'utf8');
    const open = /(<xs:schema[^>]*>)/;
    writeFileSync(
      join(dir, 'mobilesync.xsd'),
      envelope.replace(open, `$1\n<xs:import namespace="${MS}" schemaLocation="AutodiscoverMobileSync.xsd"/>`),
    );
    writeFileSync(
      join(dir, 'outlook.xsd'),
      envelope
        .replace(
          open,
          (s) =>
            `${s.replace('<xs:schema', `<xs:schema xmlns:outlook="${OL}"`)}\n<xs:import namespace="${MS}" schemaLocation="AutodiscoverMobileSync.xsd"/>\n<xs:import namespace="${OL}" schemaLocation="AutodiscoverOutlookResponse.xsd"/>`,
        )
        .replace(
          '<xs:element ref="mobilesync:Response"/>',
          '<xs:element ref="mobilesync:Response"/>\n<xs:element ref="outlook:Response"/>',
        ),
    );
  }
  return { mobilesync: join(dir, 'mobilesync.xsd'), outlook: join(dir, 'outlook.xsd') };
}

/** xmllint --schema: { ok, output }. `envelope` picks the root schema (both accept the generic error form). */
export function validate(xml: string, envelope: 'mobilesync' | 'outlook'): { ok: boolean; output: string } {
  const schema = schemas()[envelope];
  const file = join(dir!, `doc-${Math.random().toString(36).slice(2)}.xml`);
  writeFileSync(file, xml);
  const r = spawnSync(XMLLINT!, ['--noout', '--nonet', '--schema', schema, file], { encoding: 'utf8' });
  return { ok: r.status === 0, output: `${r.stdout}${r.stderr}` };
}

/** An Autodiscover request as clients send it. */
export function adRequest(
  email: string,
  schema: string = MS,
  ns = 'http://schemas.microsoft.com/exchange/autodiscover/mobilesync/requestschema/2006',
): string {
  return `<?xml version="1.0" encoding="utf-8"?>\n<Autodiscover xmlns="${ns}">\n  <Request>\n    <EMailAddress>${email}</EMailAddress>\n    <AcceptableResponseSchema>${schema}</AcceptableResponseSchema>\n  </Request>\n</Autodiscover>\n`;
}

export const SCHEMA = { mobilesync: MS, outlook: OL };
