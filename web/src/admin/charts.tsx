/** Counts as horizontal bars, each with its number in text (the bars only draw what the text says). */
export function Bars({ label, values }: { label: string; values: Record<string, number> }) {
  const entries = Object.entries(values);
  const most = Math.max(1, ...entries.map(([, v]) => v));
  return (
    <figure className="bars">
      <figcaption>{label}</figcaption>
      {entries.length === 0 ? (
        <p className="muted">Nothing yet.</p>
      ) : (
        <ul className="plain">
          {entries.map(([name, v]) => (
            <li key={name}>
              <span className="bar-name">{name}</span>
              <span className="bar" aria-hidden="true">
                <span style={{ width: `${(v / most) * 100}%` }} />
              </span>
              <span className="bar-value">{v}</span>
            </li>
          ))}
        </ul>
      )}
    </figure>
  );
}
