import type { Schemas } from './types.ts';

/**
 * The AuthZEN 1.0 shapes (docs/authzen.md) the typed client sends and receives, from the named
 * schemas of /openapi.json: the decision and search bodies are AuthZEN's own, without the /api
 * envelope.
 */

export type AuthzenEntity = Schemas['Entity'];
/** The entity a search looks for: its type only. */
export type AuthzenSearchedEntity = Schemas['SearchedEntity'];
export type AuthzenAction = Schemas['Action'];
export type EvaluationRequest = Schemas['EvaluationRequest'];
/**
 * A batch: top-level defaults and the items. The document leaves the items open (the PDP reads
 * each one after merging it with the defaults, and refuses a bad one in its own decision); here
 * each is a partial evaluation.
 */
export type EvaluationsRequest = Omit<Schemas['EvaluationsRequest'], 'evaluations'> & { evaluations?: Array<Partial<EvaluationRequest>> };
/** A decision: a permit is exactly `{decision: true}`, a deny `{decision: false}`, which says why only with AUTH_AUTHZEN_DENY_REASONS=true. */
export type Decision = Schemas['Decision'];
export type PageRequest = Schemas['PageRequest'];
export type SubjectSearchRequest = Schemas['SubjectSearchRequest'];
export type ResourceSearchRequest = Schemas['ResourceSearchRequest'];
export type ActionSearchRequest = Schemas['ActionSearchRequest'];
/** A search's page of results of type `T` (entities, or actions). */
export type SearchPage<T> = Omit<Schemas['EntitySearchResponse'], 'results'> & { results: T[] };
export type AuthzenMetadata = Schemas['AuthzenMetadata'];
