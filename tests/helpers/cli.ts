/**
 * The command line as the tests run it (docs/operations.md §10): a child process of the compiled
 * `dist/cli/main.js` when the servers run the compiled service too (tests/run.mjs), else
 * `src/cli/main.ts` through tsx. Its output is saved for the leak scan, its secrets remembered.
 * Also: one client's data written through the API and every read route's answer for it, to tell
 * whether two servers answer the same.
 */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import type { RbacClient } from '../../src/client/index.ts';
import { outputSink, rememberEnvSecrets, rememberSecret } from './leak-record.ts';
import { engineEnv, ROOT } from './server.ts';
import { waitUntil } from './wait.ts';

const ENTRY = /\.[cm]?js$/.test(process.env.AUTH_TEST_ENTRY ?? '') ? ['dist/cli/main.js'] : ['--import', 'tsx', 'src/cli/main.ts'];

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** stdout's lines, each parsed as JSON. */
  readonly results: unknown[];
}

/** The environment of a command: only what is given, PATH and HOME (nothing else inherited). */
function cliEnv(env: Readonly<Record<string, string>>): Record<string, string> {
  const full: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...engineEnv(), ...env };
  rememberEnvSecrets(full);
  if (full.AUTH_NEW_ENCRYPTION_KEY !== undefined) rememberSecret(full.AUTH_NEW_ENCRYPTION_KEY, 'AUTH_ENCRYPTION_KEY');
  return full;
}

/** What a command reads on stdin: nothing, a file (a regular file: its size is known), or text through a pipe. */
export type CliInput = { readonly file: string } | { readonly text: string };

/** Starts `rbac-gateway <args>`; its output is saved for the leak scan. */
export function spawnCli(args: readonly string[], env: Readonly<Record<string, string>>, input?: CliInput): ChildProcess {
  const fd = input !== undefined && 'file' in input ? openSync(input.file, 'r') : undefined;
  const stdin = fd ?? (input === undefined ? 'ignore' : 'pipe');
  const stdio: StdioOptions = [stdin, 'pipe', 'pipe'];
  const proc = spawn(process.execPath, [...ENTRY, ...args], { cwd: ROOT, env: cliEnv(env), stdio });
  if (fd !== undefined) closeSync(fd);
  if (input !== undefined && 'text' in input) {
    proc.stdin?.on('error', () => undefined); // a command that stops early closes its stdin: not the test's failure
    proc.stdin?.end(input.text);
  }
  const sink = outputSink(`cli ${args[0] ?? ''}`);
  proc.stdout?.on('data', (c: Buffer) => sink.write(c));
  proc.stderr?.on('data', (c: Buffer) => sink.write(c));
  proc.on('close', () => sink.close());
  return proc;
}

/** Runs `rbac-gateway <args>` to its end. */
export function runCli(args: readonly string[], env: Readonly<Record<string, string>> = {}, input?: CliInput): Promise<CliRun> {
  const proc = spawnCli(args, env, input);
  let [stdout, stderr] = ['', ''];
  proc.stdout?.on('data', (c: Buffer) => (stdout += c.toString()));
  proc.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => {
    proc.on('close', (code) => {
      const lines = stdout.split('\n').filter((l) => l.trim() !== '');
      const results = lines.map((l): unknown => {
        try {
          return JSON.parse(l);
        } catch {
          return { notJson: l };
        }
      });
      resolve({ code, stdout, stderr, results });
    });
  });
}

/** A run's one result line, with a readable failure when there is not exactly one. */
export function onlyResult(run: CliRun): Record<string, unknown> {
  if (run.results.length !== 1) throw new Error(`expected one JSON line on stdout, got ${run.results.length}:\n${run.stdout}\nstderr: ${run.stderr}`);
  return run.results[0] as Record<string, unknown>;
}

/** The names one seeded client uses. */
export interface SeededNames {
  readonly roles: readonly string[];
  readonly permissions: readonly string[];
  readonly users: readonly string[];
  readonly workflows: readonly string[];
}

/**
 * Writes a client's data: the contract's vector names (`Administrators`, `read`, `alice`,
 * `alice@example.com`) and `extra` more, with descriptions, a grant with a window, a pending
 * membership, a removal (so the changelog holds more than the state) and a workflow schedule.
 */
export async function seedClient(c: RbacClient, extra: string): Promise<SeededNames> {
  const must = async (what: string, p: Promise<{ status: number; error?: string | undefined }>): Promise<void> => {
    const res = await p;
    if (res.status >= 300) throw new Error(`seeding ${what}: HTTP ${res.status} ${res.error ?? ''}`);
  };
  const hours = (n: number): Date => new Date(Date.now() + n * 3600_000);
  const roles = ['Administrators', `editors-${extra}`];
  await must('role', c.createRole('Administrators', { description: `admins of ${extra}` }));
  await must('role', c.createRole(`editors-${extra}`, { description: 'ünïcode ✓ description' }));
  await must('grant', c.grant('Administrators', 'read'));
  await must('grant', c.grant('Administrators', `write-${extra}`));
  await must('grant', c.grant(`editors-${extra}`, 'read', { expiresAt: hours(48) }));
  await must('member', c.addMember('alice@example.com', 'Administrators'));
  await must('member', c.addMember('alice', `editors-${extra}`));
  await must('member', c.addMember(`bob-${extra}`, `editors-${extra}`, { notBefore: hours(24) }));
  await must('member', c.addMember(`carol-${extra}`, 'Administrators'));
  await must('remove', c.removeMember(`carol-${extra}`, 'Administrators'));
  // Active in a moment: its boundary is committed by the service, whose audit row names the edge's two names.
  await must('member', c.addMember(`dave-${extra}`, 'Administrators', { notBefore: new Date(Date.now() + 1500) }));
  await must('schedule', c.scheduleWorkflow('read', { interval_seconds: 3600 }));
  // A new schedule is due at once: its first run (a diff of names) is stored in a moment.
  await waitUntil('the first run of workflow read', async () => ((await c.workflowRuns('read', { limit: 10 })).data ?? []).length > 0 || undefined);
  await waitUntil(
    `the boundary of dave-${extra}`,
    async () => ((await c.audit({ limit: 1000 })).data ?? []).some((r) => r.action === 'membership.activate') || undefined,
  );
  return {
    roles,
    permissions: ['read', `write-${extra}`, 'nothing'],
    users: ['alice', 'alice@example.com', `bob-${extra}`, `carol-${extra}`, `dave-${extra}`],
    workflows: ['read'],
  };
}

/** Every read route's answer for `names`: [what was asked, HTTP status, the body without its timestamp]. */
export async function readEverything(c: RbacClient, names: SeededNames): Promise<Array<[string, number, unknown]>> {
  const out: Array<[string, number, unknown]> = [];
  const take = async (what: string, p: Promise<{ status: number; body: unknown }>): Promise<void> => {
    const res = await p;
    const { timestamp: _t, ...body } = (res.body ?? {}) as Record<string, unknown>;
    out.push([what, res.status, body]);
  };
  const page = { limit: 1000 };
  await take('roles', c.listRoles(page));
  await take('changes', c.changes(0, page));
  await take('windows', c.windows(page));
  await take('audit', c.audit(page));
  await take('schedules', c.schedules(page));
  for (const role of names.roles) {
    await take(`permissions of ${role}`, c.rolePermissions(role, page));
    await take(`members of ${role}`, c.members(role, page));
    for (const p of names.permissions) await take(`${role} has ${p}`, c.roleHasPermission(role, p));
  }
  for (const user of names.users) {
    await take(`roles of ${user}`, c.userRoles(user, page));
    await take(`permissions of ${user}`, c.userPermissions(user, page));
    for (const role of names.roles) await take(`${user} in ${role}`, c.isMember(user, role));
    for (const p of names.permissions) {
      await take(`${user} can ${p}`, c.hasPermission(user, p));
      await take(`explain ${user} ${p}`, c.explain(user, p));
    }
  }
  for (const p of names.permissions) {
    await take(`users who can ${p}`, c.whichUsersCan(p, page));
    await take(`roles that can ${p}`, c.whichRolesCan(p, page));
  }
  for (const w of names.workflows) {
    await take(`workflow users ${w}`, c.workflowUsers(w, page));
    await take(`workflow runs ${w}`, c.workflowRuns(w, page));
  }
  return out;
}
