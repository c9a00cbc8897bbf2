import { ComposedName } from '../authz/composed-name.ts';
import type { TenantGraph } from '../authz/graph.ts';
import { MAX_EVALUATIONS, refusal, type Action, type Entity, type EvaluationRequest, type EvaluationsRequest, type Semantic } from './requests.ts';

/** A decision and, for a deny, why: the reason codes of `context.reason` (docs/authzen.md). */
export const PERMIT = 0;
export const UNKNOWN_SUBJECT = 1;
export const NOT_GRANTED = 2;
export type Decision = typeof PERMIT | typeof UNKNOWN_SUBJECT | typeof NOT_GRANTED;

/** The answers of one evaluation, prebuilt: a permit carries no context (AuthZEN §5.5). */
export const DECISION_BODY: Readonly<Record<Decision, string>> = {
  [PERMIT]: '{"decision":true}',
  [UNKNOWN_SUBJECT]: '{"decision":false,"context":{"reason":"unknown_subject"}}',
  [NOT_GRANTED]: '{"decision":false,"context":{"reason":"not_granted"}}',
};

/** An item of a batch that could not be evaluated: a deny naming the problem, not a 400. */
function itemError(message: string): string {
  return JSON.stringify({ decision: false, context: { error: { status: 400, message } } });
}

/**
 * The Policy Decision Point over a tenant graph (docs/authzen.md): AuthZEN's subject, action and
 * resource mapped onto users and permissions. Synchronous and allocation-light, like a check.
 */
export class Pdp {
  readonly #subjectTypes: ReadonlySet<string>;
  /** The candidates `t:a` and `t:i:a` of the evaluation at hand, spelled in place. */
  readonly #ofType = new ComposedName();
  readonly #ofResource = new ComposedName();

  /** `subjectTypes`: the AuthZEN subject types that name users (AUTH_AUTHZEN_SUBJECT_TYPES). */
  constructor(subjectTypes: readonly string[]) {
    this.#subjectTypes = new Set(subjectTypes);
  }

  /** Whether a subject names a user. */
  isUser(subject: Entity): boolean {
    return this.#subjectTypes.has(subject.type);
  }

  /**
   * True iff the user holds a candidate permission: `a` (global), `t:a` (the type) or `t:i:a`
   * (the resource). A candidate that is not a valid name is never stored, so it matches nothing.
   */
  evaluate(g: TenantGraph, subject: Entity, action: Action, resource: Entity): Decision {
    const user = subject.id;
    const isUser = this.#subjectTypes.has(subject.type);
    const a = action.name;
    if (isUser && a.indexOf(':') < 0) {
      const t = resource.type;
      const typed = t.indexOf(':') < 0;
      const ofType = typed && this.#ofType.compose(t, a) ? this.#ofType : undefined;
      const ofResource = typed && this.#ofResource.compose(t, resource.id, a) ? this.#ofResource : undefined;
      if (g.checkAny(user, a, ofType, ofResource)) return PERMIT;
    }
    return isUser && g.hasUser(user) ? NOT_GRANTED : UNKNOWN_SUBJECT;
  }

  /** The body of a single evaluation; `count` is told each decision. */
  evaluation(g: TenantGraph, req: EvaluationRequest, count: (allowed: boolean) => void): string {
    const d = this.evaluate(g, req.subject, req.action, req.resource);
    count(d === PERMIT);
    return DECISION_BODY[d];
  }

  /**
   * The body of a batch (docs/authzen.md): each item's keys replace the defaults as whole
   * objects; an item that is still invalid is a deny carrying the error; the semantic may stop
   * early, and the answer lists the items up to the one that stopped it.
   */
  evaluations(g: TenantGraph, req: EvaluationsRequest, items: readonly unknown[], count: (allowed: boolean) => void): string {
    const semantic: Semantic = req.options?.evaluations_semantic ?? 'execute_all';
    const out: string[] = [];
    for (let i = 0; i < items.length && i < MAX_EVALUATIONS; i++) {
      const merged = mergeDefaults(req, items[i]);
      const why = merged === undefined ? `evaluations[${i}]: must be an object` : refusal('evaluation', merged);
      let allowed = false;
      if (why !== '') {
        out.push(itemError(why.startsWith('evaluations[') ? why : `evaluations[${i}].${why.split(' ')[0] ?? ''}: ${why}`));
      } else {
        const m = merged as EvaluationRequest;
        const d = this.evaluate(g, m.subject, m.action, m.resource);
        allowed = d === PERMIT;
        out.push(DECISION_BODY[d]);
      }
      count(allowed);
      if ((semantic === 'deny_on_first_deny' && !allowed) || (semantic === 'permit_on_first_permit' && allowed)) break;
    }
    return `{"evaluations":[${out.join(',')}]}`;
  }
}

/** An item with the top-level defaults for the keys it lacks (whole objects, no field merge); undefined when not an object. */
function mergeDefaults(req: EvaluationsRequest, item: unknown): object | undefined {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return undefined;
  const own = item as Record<string, unknown>;
  const merged: Record<string, unknown> = {
    subject: 'subject' in own ? own.subject : req.subject,
    action: 'action' in own ? own.action : req.action,
    resource: 'resource' in own ? own.resource : req.resource,
  };
  // Set only when there is one: a batch of 100 items makes no spread objects for it.
  if ('context' in own) merged.context = own.context;
  else if (req.context !== undefined) merged.context = req.context;
  return merged;
}
