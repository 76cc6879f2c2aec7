/** A link-styled Delete button naming what it deletes for screen readers ("Delete note Ideas"). */
export function DeleteLink({ what, onClick }: { what: string; onClick(): void }) {
  return (
    <button type="button" className="link" aria-label={`Delete ${what}`} onClick={onClick}>
      Delete
    </button>
  );
}
