import type { SortKey } from './port.js';

/** Compares records as ORDER BY sorts them (the keys, then uid). */
export function byKeys(sort: SortKey[]): (a: object, b: object) => number {
  const keys = [...sort, ...(sort.some((k) => k.field === 'uid') ? [] : [{ field: 'uid', dir: 'asc' as const }])];
  const value = (v: unknown) => (v instanceof Date ? v.getTime() : v);
  return (a, b) => {
    for (const k of keys) {
      const x = value((a as Record<string, unknown>)[k.field]);
      const y = value((b as Record<string, unknown>)[k.field]);
      if (x === y) continue;
      const c =
        x === null || x === undefined ? -1 : y === null || y === undefined ? 1 : (x as number | string) < (y as number | string) ? -1 : 1;
      return k.dir === 'desc' ? -c : c;
    }
    return 0;
  };
}
