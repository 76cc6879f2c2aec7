// The shipped nginx site (packaging/nginx/svcmail.conf) in a real nginx on loopback, for the tests of
// what it forwards and which headers it sends: only the daemons' addresses, the listen ports and the
// certificate paths are changed (a self-signed P-256 certificate for mail.example.org).
import { freePort } from './ports.js';
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const SITE = fileURLToPath(new URL('../../packaging/nginx/svcmail.conf', import.meta.url));

export interface ShippedNginx {
  /** The TLS port nginx listens on (127.0.0.1). */
  port: number;
  stop(): void;
}

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const sock = connect(port, '127.0.0.1', () => {
      sock.destroy();
      resolve(true);
    });
    sock.on('error', () => resolve(false));
  });

/**
 * Starts `nginx` (its path) in `dir` with the shipped site. `upstreams` maps the site's default
 * daemon addresses (127.0.0.1:8080 api, :8082 push, :8083 protocols) to the ones under test.
 */
export async function startShippedNginx(
  nginx: string,
  dir: string,
  upstreams: Record<string, string>,
  opts: { workerConnections?: number } = {},
): Promise<ShippedNginx> {
  const port = await freePort();
  const subj = ['-subj', '/CN=mail.example.org', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')];
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1', ...subj], {
    stdio: 'ignore',
  });
  let site = readFileSync(SITE, 'utf8');
  for (const [from, to] of Object.entries(upstreams)) site = site.replace(from, to);
  site = site
    .replace(/listen 80;\n\s*listen \[::\]:80;/, `listen 127.0.0.1:${await freePort()};`)
    .replace(/listen 443 ssl http2;\n\s*listen \[::\]:443 ssl http2;/, `listen 127.0.0.1:${port} ssl http2;`)
    .replace('/etc/ssl/svcmail/fullchain.pem', join(dir, 'cert.pem'))
    .replace('/etc/ssl/svcmail/privkey.pem', join(dir, 'key.pem'));
  writeFileSync(join(dir, 'site.conf'), site);
  const conf = join(dir, 'nginx.conf');
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => ` ${t}_temp_path ${dir}/${t};\n`).join('');
  writeFileSync(
    conf,
    `${process.getuid?.() === 0 ? 'user root;\n' : ''}daemon off;\nworker_processes 1;\npid ${dir}/nginx.pid;\nerror_log ${dir}/error.log warn;\n` +
      `events { worker_connections ${opts.workerConnections ?? 64}; }\nhttp {\n access_log off;\n${temp} include ${dir}/site.conf;\n}\n`,
  );
  execFileSync(nginx, ['-t', '-q', '-p', dir, '-c', conf], { stdio: 'pipe' });
  const child = spawn(nginx, ['-p', dir, '-c', conf], { stdio: 'ignore' });
  for (let i = 0; i < 100 && !(await listening(port)); i++) await new Promise((r) => setTimeout(r, 100));
  return { port, stop: () => child.kill('SIGQUIT') };
}
