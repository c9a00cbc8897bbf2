/**
 * #as-of: the client as of a revision (`As of revision`, applied on Enter), rebuilt from the change
 * log, and the differences from now (replay.ts). Every list is paged in the page, 200 rows at a
 * time, whatever the client's size.
 */
import { useState } from 'preact/hooks';
import { differences, stateAt, stateNow, type Differences, type Item } from '../replay.ts';
import { Field, Instant, Pager, Section, Table, useAnswer, useLocalPages } from '../ui.tsx';

const PER_PAGE = 200;

type Answer =
  | { readonly refused: string }
  | { readonly revision: number; readonly now: number; readonly then: readonly Item[]; readonly diff: Differences; readonly ms: number };

export function AsOfView() {
  const [typed, setTyped] = useState('');
  const [revision, setRevision] = useState<number | undefined>(undefined);
  const [invalid, setInvalid] = useState('');
  const { value: answer, loading } = useAnswer<Answer>(revision === undefined ? undefined : String(revision), () => rebuild(revision ?? 0));
  return (
    <>
      <form
        class="query"
        onSubmit={(e) => {
          e.preventDefault();
          const text = typed.trim();
          const ok = /^\d{1,15}$/.test(text);
          setInvalid(ok ? '' : 'A revision is a whole number, 0 or more.');
          if (ok) setRevision(Number(text));
        }}
      >
        <Field label="As of revision" value={typed} onInput={setTyped} inputMode="numeric" hint="Enter shows the client as it was at that revision." />
      </form>
      {invalid === '' ? null : <p class="refused">{invalid}</p>}
      {loading ? <p>Rebuilding revision {revision} from the change log…</p> : null}
      {answer === undefined ? null : 'refused' in answer ? <p class="refused">{answer.refused}</p> : <AsOfAnswer {...answer} />}
    </>
  );
}

async function rebuild(revision: number): Promise<Answer> {
  const started = performance.now();
  const now = await stateNow();
  if (revision > now.revision) return { refused: `Revision ${revision} is ahead of the client, which is at revision ${now.revision}.` };
  const then = await stateAt(revision);
  if ('refused' in then) return then;
  return { revision, now: now.revision, then: then.state.items(), diff: differences(then.state, now.state), ms: performance.now() - started };
}

function AsOfAnswer(props: Extract<Answer, { revision: number }>) {
  const count = (kind: Item['kind']): number => props.then.filter((i) => i.kind === kind).length;
  return (
    <div class="detail">
      <p>
        At revision {props.revision}: {count('role')} roles, {count('permission')} grants, {count('membership')} memberships. Now (revision {props.now}):{' '}
        {props.diff.added.length} added since, {props.diff.removed.length} removed since, {props.diff.rewindowed.length} with another window (rebuilt in{' '}
        {Math.round(props.ms)} ms).
      </p>
      <ItemList title={`At revision ${props.revision}`} items={props.then} empty="The client held nothing." />
      <ItemList title="Added since" items={props.diff.added} empty="Nothing was added since." />
      <ItemList title="Removed since" items={props.diff.removed} empty="Nothing was removed since." />
      <ItemList title="Another window now" items={props.diff.rewindowed} empty="No window changed since." />
    </div>
  );
}

function ItemList(props: { readonly title: string; readonly items: readonly Item[]; readonly empty: string }) {
  const pages = useLocalPages(props.items, PER_PAGE);
  return (
    <Section title={props.title}>
      <Table caption={`${props.title}, page ${pages.number}`} columns={['Kind', 'Role', 'Permission or user', 'Not before', 'Expires at']} empty={props.empty}>
        {pages.rows.map((i) => (
          <tr key={`${i.kind}\u0000${i.role}\u0000${i.name}`}>
            <td>{i.kind}</td>
            <td>{i.role}</td>
            <td>{i.name}</td>
            <td>{i.kind === 'role' ? null : <Instant value={i.not_before} />}</td>
            <td>{i.kind === 'role' ? null : <Instant value={i.expires_at} />}</td>
          </tr>
        ))}
      </Table>
      <Pager label={props.title} {...pages} />
    </Section>
  );
}
