/** #who-can: the users who have a permission and the roles that grant it, each paged. */
import { useState } from 'preact/hooks';
import { api } from '../session.ts';
import { Field, listed, pageOf, Pager, Section, Table, usePages } from '../ui.tsx';

const PER_PAGE = 200;

export function WhoCanView() {
  const [typed, setTyped] = useState('');
  const [permission, setPermission] = useState<string | undefined>(undefined);
  return (
    <>
      <form
        class="query"
        onSubmit={(e) => {
          e.preventDefault();
          if (typed.trim() !== '') setPermission(typed.trim());
        }}
      >
        <Field label="Permission" value={typed} onInput={setTyped} />
        <button type="submit">Who can</button>
      </form>
      {permission === undefined ? null : <Holders permission={permission} key={permission} />}
    </>
  );
}

function Holders(props: { readonly permission: string }) {
  const { permission } = props;
  const users = usePages<{ user: string }>(permission, (cursor) => listed(api().whichUsersCan(permission, pageOf(PER_PAGE, cursor))));
  const roles = usePages<{ role: string }>(permission, (cursor) => listed(api().whichRolesCan(permission, pageOf(PER_PAGE, cursor))));
  return (
    <div class="detail">
      <Section title={`Users who can ${permission}`}>
        <Table caption={`Users, page ${users.number}`} columns={['User']} empty={users.loading ? 'Loading…' : 'No user.'}>
          {users.rows.map((u) => (
            <tr key={u.user}>
              <td>{u.user}</td>
            </tr>
          ))}
        </Table>
        <Pager label="users" {...users} />
      </Section>
      <Section title={`Roles that grant ${permission}`}>
        <Table caption={`Roles, page ${roles.number}`} columns={['Role']} empty={roles.loading ? 'Loading…' : 'No role.'}>
          {roles.rows.map((r) => (
            <tr key={r.role}>
              <td>{r.role}</td>
            </tr>
          ))}
        </Table>
        <Pager label="roles" {...roles} />
      </Section>
    </div>
  );
}
