/**
 * The AuthZEN 1.0 shapes (docs/authzen.md) the typed client sends and receives: the decision and
 * search bodies are AuthZEN's own, without the /api envelope.
 */

export interface AuthzenEntity {
  type: string;
  id: string;
  properties?: Record<string, unknown>;
}
/** The entity a search looks for: its type only. */
export interface AuthzenSearchedEntity {
  type: string;
  id?: string;
  properties?: Record<string, unknown>;
}
export interface AuthzenAction {
  name: string;
  properties?: Record<string, unknown>;
}
export interface EvaluationRequest {
  subject: AuthzenEntity;
  action: AuthzenAction;
  resource: AuthzenEntity;
  context?: Record<string, unknown>;
}
export interface EvaluationsRequest {
  subject?: AuthzenEntity;
  action?: AuthzenAction;
  resource?: AuthzenEntity;
  context?: Record<string, unknown>;
  options?: { evaluations_semantic?: 'execute_all' | 'deny_on_first_deny' | 'permit_on_first_permit' };
  evaluations?: Array<Partial<EvaluationRequest>>;
}
/** A decision: a permit is exactly `{decision: true}`, a deny `{decision: false}`, which says why only with AUTH_AUTHZEN_DENY_REASONS=true. */
export interface Decision {
  decision: boolean;
  context?: { reason?: string; error?: { status: number; message: string } };
}
export interface PageRequest {
  limit?: number;
  token?: string;
}
export interface SubjectSearchRequest {
  subject: AuthzenSearchedEntity;
  action: AuthzenAction;
  resource: AuthzenEntity;
  context?: Record<string, unknown>;
  page?: PageRequest;
}
export interface ResourceSearchRequest {
  subject: AuthzenEntity;
  action: AuthzenAction;
  resource: AuthzenSearchedEntity;
  context?: Record<string, unknown>;
  page?: PageRequest;
}
export interface ActionSearchRequest {
  subject: AuthzenEntity;
  resource: AuthzenEntity;
  context?: Record<string, unknown>;
  page?: PageRequest;
}
export interface SearchPage<T> {
  page: { next_token: string; count: number; total: number };
  results: T[];
}
export interface AuthzenMetadata {
  policy_decision_point: string;
  access_evaluation_endpoint: string;
  access_evaluations_endpoint: string;
  search_subject_endpoint: string;
  search_resource_endpoint: string;
  search_action_endpoint: string;
}
/** Why a user holds a permission, or the roles that would grant it (GET /api/explain). */
export interface Explanation {
  has_permission: boolean;
  granted_by: string[];
  remedies: Array<{ role: string; permissions: number }>;
}
