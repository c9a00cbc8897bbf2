/**
 * #user: a user's effective permissions, a page at a time, each with the roles that grant it
 * (GET /api/explain for the page's permissions), the user's roles, and with `Permission` filled in
 * the explanation of that one permission (granted by, or the roles that would grant it).
 */
import { useState } from 'preact/hooks';
import type { Explanation, Windowed } from '../../client/index.ts';
import { api, mapLimited, must } from '../session.ts';
import { EdgeTable, Field, listed, pageOf, Pager, Section, Table, useAnswer, usePages } from '../ui.tsx';

const PERMISSIONS_PER_PAGE = 100;
const ROLES_PER_PAGE = 200;
/** Explanations asked at once: a browser keeps about six connections per origin. */
const IN_FLIGHT = 6;

interface Effective {
  readonly name: string;
  readonly grantedBy: readonly string[];
}

export function UserView() {
  const [user, setUser] = useState('');
  const [permission, setPermission] = useState('');
  const [asked, setAsked] = useState<{ user: string; permission: string } | undefined>(undefined);
  return (
    <>
      <form
        class="query"
        onSubmit={(e) => {
          e.preventDefault();
          if (user.trim() !== '') setAsked({ user: user.trim(), permission: permission.trim() });
        }}
      >
        <Field label="User" value={user} onInput={setUser} />
        <Field label="Permission" value={permission} onInput={setPermission} hint="Optional: explain this one permission too." />
        <button type="submit">Explain</button>
      </form>
      {asked === undefined ? null : <UserAnswer {...asked} key={`${asked.user}\u0000${asked.permission}`} />}
    </>
  );
}

function UserAnswer(props: { readonly user: string; readonly permission: string }) {
  const { user } = props;
  const effective = usePages<Effective>(user, async (cursor) => {
    const page = await listed(api().userPermissions(user, pageOf(PERMISSIONS_PER_PAGE, cursor)));
    const names = page.rows.map((p) => p.name);
    const explained = await mapLimited(names, IN_FLIGHT, async (name) => must(await api().explain(user, name)).granted_by);
    return { rows: names.map((name, i) => ({ name, grantedBy: explained[i] ?? [] })), next: page.next };
  });
  const roles = usePages<{ role: string } & Windowed>(user, (cursor) => listed(api().userRoles(user, pageOf(ROLES_PER_PAGE, cursor))));
  return (
    <section aria-labelledby="user-title" class="detail">
      <h3 id="user-title">User {user}</h3>
      {props.permission === '' ? null : <OneExplanation user={user} permission={props.permission} />}
      <h4>Effective permissions</h4>
      <Table
        caption={`Permissions of ${user}, page ${effective.number}`}
        columns={['Permission', 'Granted by']}
        empty={effective.loading ? 'Loading…' : 'None.'}
      >
        {effective.rows.map((p) => (
          <tr key={p.name}>
            <td>{p.name}</td>
            <td>{p.grantedBy.join(', ')}</td>
          </tr>
        ))}
      </Table>
      <Pager label={`permissions of ${user}`} {...effective} />
      <h4>Roles</h4>
      <EdgeTable caption={`Roles of ${user}, page ${roles.number}`} head="Role" rows={roles.rows.map((r) => ({ ...r, id: r.role }))} loading={roles.loading} />
      <Pager label={`roles of ${user}`} {...roles} />
    </section>
  );
}

/** GET /api/explain for one pair: who grants it, or the roles that would (least privilege first). */
function OneExplanation(props: { readonly user: string; readonly permission: string }) {
  const { value: answer } = useAnswer<Explanation>(`${props.user}\u0000${props.permission}`, async () =>
    must(await api().explain(props.user, props.permission)),
  );
  if (answer === undefined) return <p>Explaining…</p>;
  return (
    <Section title={`Explanation of ${props.permission}`}>
      <p class="verdict">
        {props.user} {answer.has_permission ? 'has' : 'does not have'} {props.permission}
        {answer.has_permission ? `, granted by ${answer.granted_by.join(', ')}.` : '.'}
      </p>
      {answer.has_permission ? null : (
        <Table caption="Roles that would grant it, least privilege first" columns={['Role', 'Permissions it grants']} empty="No role grants it.">
          {answer.remedies.map((r) => (
            <tr key={r.role}>
              <td>{r.role}</td>
              <td>{r.permissions}</td>
            </tr>
          ))}
        </Table>
      )}
    </Section>
  );
}
