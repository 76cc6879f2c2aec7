// The web app's build: one entry per page of lib/web/pages.ts, hashed file names (served with a year
// of cache life) and a manifest the pages read to name their script, its imports and styles.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));

export const PAGE_ENTRIES = {
  mail: 'src/mail/main.tsx',
  settings: 'src/settings/main.tsx',
  admin: 'src/admin/main.tsx',
  escrow: 'src/escrow/main.tsx',
} as const;

export default defineConfig({
  root: here,
  // Always the production build of React and the rest, whatever NODE_ENV the builder runs under (the
  // test suite's set-up runs under NODE_ENV=test).
  mode: 'production',
  define: { 'process.env.NODE_ENV': JSON.stringify('production') },
  oxc: { jsx: { runtime: 'automatic', development: false } },
  base: '/assets/',
  publicDir: false,
  logLevel: 'warn',
  // The Argon2id worker (src/crypto/argon2.worker.ts) is a module worker, named like the other files.
  worker: { format: 'es', rollupOptions: { output: { entryFileNames: '[name]-[hash].js', chunkFileNames: '[name]-[hash].js' } } },
  build: {
    outDir: 'build',
    emptyOutDir: true,
    manifest: true,
    // The preload polyfill is an inline script; the pages' CSP allows none (script-src 'self').
    modulePreload: { polyfill: false },
    target: 'es2022',
    reportCompressedSize: false,
    // The escrow console's investigation loads the S/MIME client (pkijs, asn1js, the Argon2 WASM)
    // when it is first opened: ~550 KB minified, ~100 KB on the wire. No page loads it up front.
    chunkSizeWarningLimit: 600,
    rollupOptions: {
      input: Object.fromEntries(Object.entries(PAGE_ENTRIES).map(([name, file]) => [name, fileURLToPath(new URL(file, import.meta.url))])),
      output: { entryFileNames: '[name]-[hash].js', chunkFileNames: '[name]-[hash].js', assetFileNames: '[name]-[hash][extname]' },
    },
  },
});
