import type { Command } from 'commander';
import type { CheckedItem, ChecklistItem, DomainVerdict } from '../../lib/dns/index.js';
import { CliError, collect, configFrom, emit, EXIT, table, type GlobalOptions } from '../output.js';

export function renderChecklist(items: ChecklistItem[]): string {
  if (items.length === 0) return '  (no domains: run svcmail setup --domain …)';
  return items.map((i) => `  ${i.record}\n      ; ${i.purpose}: ${i.note}`).join('\n');
}

export function renderChecked(items: CheckedItem[]): string {
  // 'error' (the lookup itself failed) reads as the summary line says it: not checked.
  const rows = items.map((i) => ({
    status: i.status === 'error' ? 'not checked' : i.status,
    type: i.type,
    name: i.name,
    found: i.found.join(' | ').slice(0, 60),
  }));
  const fixes = items.filter((i) => i.fix).map((i) => `  ${i.name} ${i.type}: ${i.fix}`);
  const count = (s: string) => items.filter((i) => i.status === s).length;
  return [
    table(rows, ['status', 'type', 'name', 'found']),
    ...(fixes.length ? ['', 'to fix:', ...fixes] : []),
    '',
    `dns: ${count('present')} present, ${count('missing')} missing, ${count('wrong')} wrong, ${count('error')} not checked`,
  ].join('\n');
}

export function registerDns(program: Command): void {
  program
    .command('dns')
    .description(
      'the DNS records each domain needs (MX, SPF, DKIM, DMARC, _svc, autodiscover); --check looks them up live and verifies each domain whose MX points here (only verified domains accept inbound mail)',
    )
    .option('--domain <domain>', 'only this domain')
    .option('--check', 'look each record up and report present, missing or wrong')
    .option(
      '--resolver <ip[:port]>',
      'ask this name server (repeatable; default mail:dns:check_nameservers, else the system resolvers)',
      collect,
    )
    .action(async (opts: { domain?: string; check?: boolean; resolver?: string[] }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const config = configFrom(g);
      // Loaded on use: the datastore and the product catalog are heavy, and --help needs neither.
      const [
        { checkItems, describeVerdicts, dnsChecklist, nameservers, verifyCheckedDomains },
        { productModels, productRegistry },
        { openStore },
        { cliPrincipal },
      ] = await Promise.all([
        import('../../lib/dns/index.js'),
        import('../../lib/catalog.js'),
        import('../../lib/storage/index.js'),
        import('../admin/client.js'),
      ]);
      const store = await openStore(config, productModels(productRegistry()));
      try {
        const items = await dnsChecklist(config, store, opts.domain);
        if (opts.domain && items.length === 0)
          throw new CliError(`${opts.domain}: not a domain served here (svcmail setup --domain ${opts.domain})`, EXIT.usage);
        if (!opts.check) {
          emit(
            g,
            { items },
            (d: { items: ChecklistItem[] }) =>
              `${renderChecklist(d.items)}\n\ndns: ${d.items.length} records for ${new Set(d.items.map((i) => i.domain)).size} domain(s)`,
          );
          return;
        }
        const checked = await checkItems(items, nameservers(opts.resolver ?? config.get('mail:dns:check_nameservers')));
        // A domain whose MX points here is verified: from now on its inbound mail is accepted.
        const domains = await verifyCheckedDomains(store, { principal: cliPrincipal() }, checked);
        emit(
          g,
          { items: checked, domains },
          (d: { items: CheckedItem[]; domains: DomainVerdict[] }) => `${renderChecked(d.items)}\n${describeVerdicts(d.domains).join('\n')}`,
        );
        if (checked.some((i) => i.status !== 'present')) process.exitCode = EXIT.failure;
      } finally {
        await store.close();
      }
    });
}
