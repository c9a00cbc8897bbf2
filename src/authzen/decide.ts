import { ComposedName } from '../authz/composed-name.ts';
import type { TenantGraph } from '../authz/graph.ts';
import { MAX_EVALUATIONS, refusal, type Action, type Entity, type EvaluationRequest, type EvaluationsRequest, type Semantic } from './requests.ts';

/** A decision and, for a deny, why: the reason codes of `context.reason` (docs/authzen.md). */
export const PERMIT = 0;
export const UNKNOWN_SUBJECT = 1;
export const NOT_GRANTED = 2;
export type Decision = typeof PERMIT | typeof UNKNOWN_SUBJECT | typeof NOT_GRANTED;

/**
 * The answers of one evaluation, prebuilt, by decision: a permit carries no context (AuthZEN
 * §5.5); a deny is exactly `{"decision":false}`, since interop clients compare answers as exact
 * JSON, unless reasons were asked for (AUTH_AUTHZEN_DENY_REASONS).
 */
function decisionBodies(denyReasons: boolean): Readonly<Record<Decision, string>> {
  const deny = (reason: string): string => (denyReasons ? `{"decision":false,"context":{"reason":"${reason}"}}` : '{"decision":false}');
  return { [PERMIT]: '{"decision":true}', [UNKNOWN_SUBJECT]: deny('unknown_subject'), [NOT_GRANTED]: deny('not_granted') };
}

/**
 * The permission name an AuthZEN action name is stored as: `/` reads as `.` (MCP's `tools/call`
 * is `tools.call`, docs/authzen.md). The string itself when it has no `/`.
 */
export function storedAction(name: string): string {
  return name.indexOf('/') < 0 ? name : name.replaceAll('/', '.');
}

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
  readonly #bodies: Readonly<Record<Decision, string>>;
  /** The candidates `t:a` and `t:i:a` of the evaluation at hand, spelled in place; `a` too when it has a `/`. */
  readonly #ofType = new ComposedName();
  readonly #ofResource = new ComposedName();
  readonly #global = new ComposedName();

  /**
   * `subjectTypes`: the AuthZEN subject types that name users (AUTH_AUTHZEN_SUBJECT_TYPES);
   * `denyReasons`: whether a deny says why (AUTH_AUTHZEN_DENY_REASONS).
   */
  constructor(subjectTypes: readonly string[], denyReasons: boolean) {
    this.#subjectTypes = new Set(subjectTypes);
    this.#bodies = decisionBodies(denyReasons);
  }

  /** Whether a subject names a user. */
  isUser(subject: Entity): boolean {
    return this.#subjectTypes.has(subject.type);
  }

  /**
   * True iff the user holds a candidate permission: `a` (global), `t:a` (the type) or `t:i:a`
   * (the resource), with `/` in `a` read as `.`. A candidate that is not a valid name is never
   * stored, so it matches nothing.
   */
  evaluate(g: TenantGraph, subject: Entity, action: Action, resource: Entity): Decision {
    const user = subject.id;
    const isUser = this.#subjectTypes.has(subject.type);
    const a = action.name;
    if (isUser && a.indexOf(':') < 0) {
      const t = resource.type;
      const typed = t.indexOf(':') < 0;
      // Spelled only when it has a `/` to read as `.`: the common action stays the string it came as.
      const global = a.indexOf('/') < 0 ? a : this.#global.action(a) ? this.#global : undefined;
      const ofType = typed && this.#ofType.compose(t, a) ? this.#ofType : undefined;
      const ofResource = typed && this.#ofResource.compose(t, resource.id, a) ? this.#ofResource : undefined;
      if (g.checkAny(user, global, ofType, ofResource)) return PERMIT;
    }
    return isUser && g.hasUser(user) ? NOT_GRANTED : UNKNOWN_SUBJECT;
  }

  /** The body of a single evaluation; `count` is told each decision. */
  evaluation(g: TenantGraph, req: EvaluationRequest, count: (allowed: boolean) => void): string {
    const d = this.evaluate(g, req.subject, req.action, req.resource);
    count(d === PERMIT);
    return this.#bodies[d];
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
        out.push(this.#bodies[d]);
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
