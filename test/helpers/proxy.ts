/**
 * A member of `t` for a Proxy's get trap: methods bound to the object itself, so classes with
 * private fields (the SQL store and repos) still work behind a test's Proxy.
 */
export function boundMember(t: object, p: string | symbol): unknown {
  const v = Reflect.get(t, p, t) as unknown;
  return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
}
