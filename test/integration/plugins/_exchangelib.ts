// python3-exchangelib (Debian), an Outlook-schema Autodiscover client nobody here wrote: it makes
// the request body and reads the answer with its own parser (TESTING.md: Protocols, Autodiscover).
// A test file that uses it asks requirePrograms('python3-exchangelib') first (test/helpers/peers.ts).
import { spawn } from 'node:child_process';

const PY = '/usr/bin/python3';

const SCRIPT = `
import json, sys
from exchangelib.autodiscover.properties import Autodiscover
if sys.argv[1] == 'request':
    sys.stdout.buffer.write(Autodiscover.payload(sys.argv[2]))
    sys.exit(0)
a = Autodiscover.from_bytes(sys.stdin.buffer.read())
if a.response is None:
    e = a.error_response.error
    print(json.dumps({'error': {'code': e.code, 'message': e.message}}))
else:
    r = a.response
    print(json.dumps({
        'displayName': r.user.display_name, 'smtp': r.user.autodiscover_smtp_address,
        'type': r.account.type, 'action': r.account.action,
        'protocols': [{'version': p.version,
                       'mailStore': p.mail_store and {'internal': p.mail_store.internal_url, 'external': p.mail_store.external_url},
                       'addressBook': p.address_book and {'internal': p.address_book.internal_url, 'external': p.address_book.external_url}}
                      for p in r.account.protocols],
    }))
`;

/** Runs the script without blocking: the servers it talks to may live in this process. */
function run(args: string[], input = ''): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn(PY, ['-c', SCRIPT, ...args]);
    const out: Buffer[] = [];
    let err = '';
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(Buffer.concat(out)) : reject(new Error(err))));
    child.stdin.end(input);
  });
}

/** The request body exchangelib sends for an address (Outlook request schema, 2006a response). */
export const exchangelibRequest = (email: string): Promise<Buffer> => run(['request', email]);

/** What exchangelib reads from an answer. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- checked field by field
export const exchangelibRead = async (xml: string): Promise<any> => JSON.parse((await run(['parse'], xml)).toString('utf8'));
