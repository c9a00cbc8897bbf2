import type { AuthzenSchemaName } from '../../authzen/requests.ts';

/** The AuthZEN decision routes (docs/authzen.md), at the service root; their ids are their operationIds and metric labels. */
export interface AuthzenRoute {
  readonly id: 'authzen_evaluation' | 'authzen_evaluations' | 'authzen_search_subject' | 'authzen_search_resource' | 'authzen_search_action';
  readonly path: string;
  readonly schema: AuthzenSchemaName;
  readonly summary: string;
  /** The request keys a search page token is bound to (the search's query). */
  readonly bound: readonly string[];
}

export const AUTHZEN_ROUTES: readonly AuthzenRoute[] = [
  {
    id: 'authzen_evaluation',
    path: '/access/v1/evaluation',
    schema: 'evaluation',
    summary: 'AuthZEN access evaluation: may the subject do the action on the resource?',
    bound: [],
  },
  {
    id: 'authzen_evaluations',
    path: '/access/v1/evaluations',
    schema: 'evaluations',
    summary: 'AuthZEN batch of evaluations, with defaults and a semantic',
    bound: [],
  },
  {
    id: 'authzen_search_subject',
    path: '/access/v1/search/subject',
    schema: 'searchSubject',
    summary: 'AuthZEN subject search: who may do the action on the resource',
    bound: ['subject', 'action', 'resource', 'context'],
  },
  {
    id: 'authzen_search_resource',
    path: '/access/v1/search/resource',
    schema: 'searchResource',
    summary: 'AuthZEN resource search: on which resources of a type the subject may do the action',
    bound: ['subject', 'action', 'resource', 'context'],
  },
  {
    id: 'authzen_search_action',
    path: '/access/v1/search/action',
    schema: 'searchAction',
    summary: 'AuthZEN action search: what the subject may do on the resource',
    bound: ['subject', 'resource', 'context'],
  },
];

/** The metadata route's operationId and metric label. */
export const AUTHZEN_CONFIGURATION_ID = 'authzen_configuration';
