import type { TenantGraph } from '../../authz/graph.ts';
import type { Pdp } from '../../authzen/decide.ts';
import type { AuthzenSchemaName, SearchRequest } from '../../authzen/requests.ts';
import { searchActions, searchResources, searchSubjects } from '../../authzen/search.ts';

/** The AuthZEN decision routes (docs/authzen.md), at the service root; their ids are their operationIds and metric labels. */
interface AuthzenRouteBase<Id extends string> {
  readonly id: Id;
  readonly path: string;
  readonly schema: AuthzenSchemaName;
  readonly summary: string;
}

/** One evaluation: may the subject do the action on the resource? */
export interface EvaluationRoute extends AuthzenRouteBase<'authzen_evaluation'> {
  readonly kind: 'evaluation';
}

/** A batch of evaluations; without items, the single evaluation (AuthZEN §7.1). */
export interface EvaluationsRoute extends AuthzenRouteBase<'authzen_evaluations'> {
  readonly kind: 'evaluations';
}

/** A search, answered in pages of sorted ids. */
export interface SearchRoute extends AuthzenRouteBase<'authzen_search_subject' | 'authzen_search_resource' | 'authzen_search_action'> {
  readonly kind: 'search';
  /** What it finds: the results are entities of the request's subject or resource type, or action names. */
  readonly finds: 'subject' | 'resource' | 'action';
  /** The sorted results of the whole search. */
  search(g: TenantGraph, pdp: Pdp, req: SearchRequest): readonly string[];
  /** The request keys a search page token is bound to (the search's query). */
  readonly bound: ReadonlyArray<keyof SearchRequest>;
}

export type AuthzenRoute = EvaluationRoute | EvaluationsRoute | SearchRoute;

export const AUTHZEN_ROUTES: readonly AuthzenRoute[] = [
  {
    id: 'authzen_evaluation',
    kind: 'evaluation',
    path: '/access/v1/evaluation',
    schema: 'evaluation',
    summary: 'AuthZEN access evaluation: may the subject do the action on the resource?',
  },
  {
    id: 'authzen_evaluations',
    kind: 'evaluations',
    path: '/access/v1/evaluations',
    schema: 'evaluations',
    summary: 'AuthZEN batch of evaluations, with defaults and a semantic',
  },
  {
    id: 'authzen_search_subject',
    kind: 'search',
    finds: 'subject',
    path: '/access/v1/search/subject',
    schema: 'searchSubject',
    summary: 'AuthZEN subject search: who may do the action on the resource',
    search: searchSubjects,
    bound: ['subject', 'action', 'resource', 'context'],
  },
  {
    id: 'authzen_search_resource',
    kind: 'search',
    finds: 'resource',
    path: '/access/v1/search/resource',
    schema: 'searchResource',
    summary: 'AuthZEN resource search: on which resources of a type the subject may do the action',
    search: searchResources,
    bound: ['subject', 'action', 'resource', 'context'],
  },
  {
    id: 'authzen_search_action',
    kind: 'search',
    finds: 'action',
    path: '/access/v1/search/action',
    schema: 'searchAction',
    summary: 'AuthZEN action search: what the subject may do on the resource',
    search: searchActions,
    bound: ['subject', 'resource', 'context'],
  },
];

/** The metadata route's operationId and metric label. */
export const AUTHZEN_CONFIGURATION_ID = 'authzen_configuration';
