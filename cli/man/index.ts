import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PRODUCT } from '../../lib/version.js';
import { buildProgram } from '../main.js';
import { commandPage, mainPage } from './command-pages.js';
import { confPage } from './conf-page.js';
import { renderPage, type Page } from './roff.js';

export function allPages(): Page[] {
  const program = buildProgram();
  return [mainPage(program), ...program.commands.filter((c) => c.name() !== 'help').map(commandPage), confPage()];
}

/** Writes man1/*.1 and man5/*.5 under dir; answers the files written. */
export function writeManPages(dir: string): string[] {
  const out: string[] = [];
  for (const p of allPages()) {
    const sub = join(dir, `man${p.section}`);
    mkdirSync(sub, { recursive: true });
    const file = join(sub, `${p.name}.${p.section}`);
    writeFileSync(file, renderPage(p, PRODUCT.version));
    out.push(file);
  }
  return out;
}
