/**
 * #changes: the change timeline, newest first, a page at a time (timeline.ts), filtered by the
 * `Role`, `User` and `Permission` fields (applied on Enter).
 */
import { useState } from 'preact/hooks';
import type { ChangeRow } from '../../client/index.ts';
import { api } from '../session.ts';
import { utc } from '../replay.ts';
import { olderChanges, type ChangeFilter, type TimelinePage } from '../timeline.ts';
import { Field, Instant, Table, useAnswer } from '../ui.tsx';

const NO_FILTER: ChangeFilter = { role: '', user: '', permission: '' };

export function ChangesView() {
  const [role, setRole] = useState('');
  const [user, setUser] = useState('');
  const [permission, setPermission] = useState('');
  const [filter, setFilter] = useState<ChangeFilter>(NO_FILTER);
  /** The newest revision of each page seen: the first is the client's revision when asked. */
  const [tops, setTops] = useState<ReadonlyArray<number | undefined>>([undefined]);
  const top = tops[tops.length - 1];
  const query = `${JSON.stringify(filter)} ${top ?? 'now'}`;
  const { value: page, loading } = useAnswer(query, async () => olderChanges(top ?? (await currentRevision()), filter));
  return (
    <>
      <form
        class="query"
        onSubmit={(e) => {
          e.preventDefault();
          setFilter({ role: role.trim(), user: user.trim(), permission: permission.trim() });
          setTops([undefined]);
        }}
      >
        <Field label="Role" value={role} onInput={setRole} />
        <Field label="User" value={user} onInput={setUser} />
        <Field label="Permission" value={permission} onInput={setPermission} />
        <button type="submit">Filter</button>
      </form>
      {page === undefined ? (
        <p>{loading ? 'Loading…' : ''}</p>
      ) : (
        <>
          <p>
            Revisions {page.below + 1} to {page.upTo}, newest first{filtered(filter) ? ', the rows that match the filter' : ''}.
          </p>
          <TimelineTable page={page} />
          <div class="pager" role="group" aria-label="Pages of changes">
            <button type="button" disabled={tops.length <= 1} onClick={() => setTops(tops.slice(0, -1))}>
              Newer
            </button>
            <button type="button" disabled={page.below <= 0} onClick={() => setTops([...tops, page.below])}>
              Older
            </button>
          </div>
        </>
      )}
    </>
  );
}

function TimelineTable(props: { readonly page: TimelinePage }) {
  const { page } = props;
  return (
    <Table class="changes" caption={`Changes, revisions ${page.below + 1} to ${page.upTo}`} columns={['Revision', 'Change', 'Time']} empty="No change here.">
      {page.rows.map((r, i) => (
        <tr key={`${r.revision}-${i}`}>
          <td>{r.revision}</td>
          <td>
            <Change row={r} />
          </td>
          <td>
            <Instant value={utc(r.timestamp)} />
          </td>
        </tr>
      ))}
    </Table>
  );
}

/** What a row changed, in words: its op and the names and window it carries. */
export function Change(props: { readonly row: ChangeRow }) {
  const r = props.row as ChangeRow & { added?: number; removed?: number };
  const parts = [
    r.role === undefined || r.role === '' ? undefined : `role ${r.role}`,
    r.permission === undefined ? undefined : `permission ${r.permission}`,
    r.user === undefined ? undefined : `user ${r.user}`,
    r.not_before === undefined ? undefined : `not before ${r.not_before}`,
    r.expires_at === undefined ? undefined : `expires at ${r.expires_at}`,
    r.added === undefined ? undefined : `${r.added} added, ${r.removed ?? 0} removed`,
  ].filter((p) => p !== undefined);
  return (
    <>
      <code>{r.op}</code> {parts.join(', ')}
    </>
  );
}

function filtered(f: ChangeFilter): boolean {
  return f.role !== '' || f.user !== '' || f.permission !== '';
}

/** The client's revision now (X-Authz-Revision of a one-row read). */
export async function currentRevision(): Promise<number> {
  const res = await api().listRoles({ limit: 1 });
  if (res.revision === undefined) throw new Error(`no X-Authz-Revision in the answer (${res.status})`);
  return res.revision;
}
