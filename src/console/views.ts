/** The console's views, each at its URL fragment (docs/console.md); the fragment never holds the key. */
export const VIEWS = [
  { id: 'roles', title: 'Roles' },
  { id: 'user', title: 'User' },
  { id: 'who-can', title: 'Who can' },
  { id: 'windows', title: 'Windows' },
  { id: 'changes', title: 'Changes' },
  { id: 'as-of', title: 'As of' },
  { id: 'preview', title: 'Preview' },
] as const;

export type ViewId = (typeof VIEWS)[number]['id'];

/** The view the fragment names; the roles for anything else. */
export function viewOf(hash: string): ViewId {
  const id = hash.replace(/^#/, '');
  return VIEWS.find((v) => v.id === id)?.id ?? 'roles';
}
