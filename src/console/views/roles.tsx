/**
 * #roles: the client's roles, a page at a time; a role's permissions and members, each paged, for
 * the role picked in the list or typed in `Role`.
 */
import { useState } from 'preact/hooks';
import type { Role, Windowed } from '../../client/index.ts';
import { api } from '../session.ts';
import { EdgeTable, Field, listed, pageOf, Pager, Section, Table, usePages } from '../ui.tsx';

const ROLES_PER_PAGE = 100;
const EDGES_PER_PAGE = 200;

export function RolesView() {
  const [typed, setTyped] = useState('');
  const [role, setRole] = useState<string | undefined>(undefined);
  const roles = usePages<Role>('roles', (cursor) => listed(api().listRoles(pageOf(ROLES_PER_PAGE, cursor))));
  return (
    <>
      <form
        class="query"
        onSubmit={(e) => {
          e.preventDefault();
          if (typed.trim() !== '') setRole(typed.trim());
        }}
      >
        <Field label="Role" value={typed} onInput={setTyped} hint="A role's name; Enter shows its permissions and members." />
        <button type="submit">Show role</button>
      </form>
      <Section title="Roles">
        <Table caption={`Roles, page ${roles.number}`} columns={['Role', 'Description']} empty={roles.loading ? 'Loading…' : 'No roles.'}>
          {roles.rows.map((r) => (
            <tr key={r.role}>
              <td>
                <button type="button" class="link" aria-pressed={r.role === role} onClick={() => setRole(r.role)}>
                  {r.role}
                </button>
              </td>
              <td>{r.description}</td>
            </tr>
          ))}
        </Table>
        <Pager label="roles" {...roles} />
      </Section>
      {role === undefined ? null : <RoleDetail role={role} key={role} />}
    </>
  );
}

/** The role's permissions and members, as the API lists them (active edges; windows shown). */
function RoleDetail(props: { readonly role: string }) {
  const role = props.role;
  const permissions = usePages<{ name: string } & Windowed>(role, (cursor) => listed(api().rolePermissions(role, pageOf(EDGES_PER_PAGE, cursor))));
  const members = usePages<{ user: string } & Windowed>(role, (cursor) => listed(api().members(role, pageOf(EDGES_PER_PAGE, cursor))));
  return (
    <section aria-labelledby="role-title" class="detail">
      <h3 id="role-title">Role {role}</h3>
      <h4>Permissions</h4>
      <EdgeTable
        caption={`Permissions of ${role}, page ${permissions.number}`}
        head="Permission"
        rows={permissions.rows.map((p) => ({ ...p, id: p.name }))}
        loading={permissions.loading}
      />
      <Pager label={`permissions of ${role}`} {...permissions} />
      <h4>Members</h4>
      <EdgeTable
        caption={`Members of ${role}, page ${members.number}`}
        head="User"
        rows={members.rows.map((m) => ({ ...m, id: m.user }))}
        loading={members.loading}
      />
      <Pager label={`members of ${role}`} {...members} />
    </section>
  );
}
