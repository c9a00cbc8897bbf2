import type { TenantGraph } from '../../authz/graph.ts';
import type { ListRoute, ReadRoute, WorkflowRoute } from './route-types.ts';

const first = (p: readonly string[]): string => p[0] as string;

/** The 404 of the routes of one schedule. */
const NO_SCHEDULE = 'The workflow has no schedule';

/**
 * The workflow routes (docs/api.md §6): a workflow is a permission name. The two reads are
 * answered from the tenant graph like the other reads; schedules and runs live in the database
 * and are answered by the slow path (http/handle/workflow-answers.ts).
 */
export const WORKFLOW_ROUTES: ReadonlyArray<ListRoute | ReadRoute | WorkflowRoute> = [
  {
    id: 'workflow.users',
    kind: 'list',
    method: 'GET',
    path: '/api/workflow/users/{workflow}',
    params: ['workflow'],
    status: 200,
    message: 'OK',
    data: 'users',
    summary: 'Users who can run the workflow (hold the permission through any role)',
    names: (g: TenantGraph, p) => g.whichUsersCan(first(p)),
    items: 'user',
  },
  {
    id: 'workflow.can_run',
    kind: 'read',
    method: 'GET',
    path: '/api/workflow/user/{user}/can_run/{workflow}',
    params: ['user', 'workflow'],
    status: 200,
    message: 'OK',
    data: 'canRun',
    summary: 'Whether the user can run the workflow',
    run: (g: TenantGraph, p) => ({ can_run: g.check(first(p), p[1] as string) }),
  },
  {
    id: 'workflow.schedule',
    kind: 'workflow',
    op: 'schedule',
    method: 'POST',
    path: '/api/workflow/schedule/{workflow}',
    params: ['workflow'],
    status: 201,
    message: 'Workflow scheduled',
    data: 'scheduled',
    body: 'schedule',
    badRequest: 'Invalid name or body, or webhook host not in AUTH_WEBHOOK_ALLOWED_HOSTS',
    summary: 'Creates or replaces the schedule of the workflow; the first run follows at once. The webhook secret is shown only here',
  },
  {
    id: 'workflow.schedules',
    kind: 'workflow',
    op: 'schedules',
    method: 'GET',
    path: '/api/workflow/schedules',
    params: [],
    status: 200,
    message: 'OK',
    data: 'schedules',
    summary: "The client's workflow schedules",
  },
  {
    id: 'workflow.unschedule',
    kind: 'workflow',
    op: 'unschedule',
    method: 'DELETE',
    path: '/api/workflow/schedule/{workflow}',
    params: ['workflow'],
    status: 200,
    message: 'Workflow unscheduled',
    data: 'unscheduled',
    body: 'none',
    notFound: NO_SCHEDULE,
    summary: 'Deletes the schedule of the workflow with its runs',
  },
  {
    id: 'workflow.runs',
    kind: 'workflow',
    op: 'runs',
    method: 'GET',
    path: '/api/workflow/runs/{workflow}',
    params: ['workflow'],
    status: 200,
    message: 'OK',
    data: 'runs',
    notFound: NO_SCHEDULE,
    summary: "The schedule's runs, newest first, each with its webhook delivery",
  },
];
