// The build's files as the build compressed them (web/build.ts writes <file>.br and <file>.gz): a
// request that accepts brotli or gzip gets the compressed copy with Content-Encoding, the file's own
// Content-Type and Vary: Accept-Encoding — no compression work per request. Anything else falls
// through to the plain file.
import { existsSync } from 'node:fs';
import { extname, join, normalize, sep } from 'node:path';
import type { RequestHandler } from 'express';

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

/** Which encoding to serve for this Accept-Encoding: brotli first, then gzip (q=0 refuses one). */
export function chooseEncoding(accept: string): 'br' | 'gzip' | null {
  const offered = new Map(
    accept
      .toLowerCase()
      .split(',')
      .map((part) => {
        const [name, ...params] = part.trim().split(';');
        const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find(Boolean);
        return [name.trim(), q === undefined ? 1 : Number(q)] as const;
      }),
  );
  const ok = (name: string) => (offered.get(name) ?? offered.get('*') ?? 0) > 0;
  return ok('br') ? 'br' : ok('gzip') ? 'gzip' : null;
}

/** Rewrites a request for a compressible build file to its compressed copy, when the client takes one and it exists. */
export function precompressed(dir: string): RequestHandler {
  const root = normalize(dir + sep);
  return (req, res, next) => {
    const type = TYPES[extname(req.path)];
    if ((req.method !== 'GET' && req.method !== 'HEAD') || !type) return next();
    res.vary('Accept-Encoding');
    const encoding = chooseEncoding(String(req.headers['accept-encoding'] ?? ''));
    if (!encoding) return next();
    const suffix = encoding === 'br' ? '.br' : '.gz';
    let path: string;
    try {
      path = decodeURIComponent(req.path);
    } catch {
      return next(); // a malformed escape: the static handler answers it
    }
    const file = normalize(join(root, path));
    if (!file.startsWith(root) || !existsSync(file + suffix)) return next();
    res.setHeader('Content-Encoding', encoding);
    res.setHeader('Content-Type', type);
    req.url = `${req.path}${suffix}`;
    next();
  };
}
