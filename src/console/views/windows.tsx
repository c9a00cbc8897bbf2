/**
 * #windows: every grant and membership with a boundary ahead (GET /api/windows), by that boundary,
 * a page at a time; on each page the pending ones (not active yet) under a heading of their own,
 * then the active ones that will end. Bounds as the API writes them: ISO 8601, UTC.
 */
import type { WindowEntry } from '../../client/index.ts';
import { api } from '../session.ts';
import { Instant, listed, pageOf, Pager, Section, Table, usePages } from '../ui.tsx';

const PER_PAGE = 200;

export function WindowsView() {
  const windows = usePages<WindowEntry>('windows', (cursor) => listed(api().windows(pageOf(PER_PAGE, cursor))));
  const nowMs = Date.now();
  const now = new Date(nowMs).toISOString();
  const pending = windows.rows.filter((w) => w.not_before !== undefined && Date.parse(w.not_before) > nowMs);
  const ending = windows.rows.filter((w) => !pending.includes(w));
  return (
    <>
      <p>
        Page {windows.number} of the edges with a boundary ahead, by that boundary. Times are UTC (ISO 8601); now is <Instant value={now} />.
      </p>
      <Section title="Pending">
        <WindowTable caption="Pending: active from Not before on" rows={pending} loading={windows.loading} />
      </Section>
      <Section title="Active, with an end">
        <WindowTable caption="Active until Expires at" rows={ending} loading={windows.loading} />
      </Section>
      <Pager label="windows" {...windows} />
    </>
  );
}

function WindowTable(props: { readonly caption: string; readonly rows: readonly WindowEntry[]; readonly loading: boolean }) {
  return (
    <Table
      caption={props.caption}
      columns={['Kind', 'Role', 'User or permission', 'Not before', 'Expires at']}
      empty={props.loading ? 'Loading…' : 'None on this page.'}
    >
      {props.rows.map((w) => {
        const other = w.kind === 'membership' ? w.user : w.permission;
        return (
          <tr key={`${w.kind}\u0000${w.role}\u0000${other}`}>
            <td>{w.kind}</td>
            <td>{w.role}</td>
            <td>{other}</td>
            <td>
              <Instant value={w.not_before} />
            </td>
            <td>
              <Instant value={w.expires_at} />
            </td>
          </tr>
        );
      })}
    </Table>
  );
}
