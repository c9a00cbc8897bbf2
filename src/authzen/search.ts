import { ComposedName } from '../authz/composed-name.ts';
import type { TenantGraph } from '../authz/graph.ts';
import { readPermission } from '../authz/resources.ts';
import { storedAction, type Pdp } from './decide.ts';
import type { SearchRequest } from './requests.ts';

/**
 * The three searches of docs/authzen.md, each the complete, sorted, duplicate-free list of what
 * would evaluate true, then paged by the caller: a page costs its own size plus a binary search.
 * The common cases read lists the graph keeps sorted through every write (the holders of one
 * permission, the known resources of a type); a union of several, or a user's own resources and
 * actions, is built once per revision and remembered until the next change.
 */

const NONE: readonly string[] = [];

/** An unambiguous memo key of arbitrary strings (AuthZEN ids may hold any character). */
const keyOf = (...parts: readonly string[]): string => parts.map((p) => `${p.length}:${p}`).join('');

/** The users holding a candidate for the action on the resource. */
export function searchSubjects(g: TenantGraph, pdp: Pdp, req: SearchRequest): readonly string[] {
  const a = storedAction(req.action.name);
  if (!pdp.isUser(req.subject) || a.includes(':')) return NONE;
  const { type: t, id: i } = req.resource;
  const candidates = t.includes(':') ? [a] : [a, `${t}:${a}`, `${t}:${i}:${a}`];
  const lists = candidates.map((c) => g.whichUsersCan(c)).filter((l) => l.length > 0);
  // Usually one permission grants it: its holder list is kept sorted by the graph, ready to page.
  if (lists.length <= 1) return lists[0] ?? NONE;
  return g.remember(`ss${keyOf(...candidates)}`, () => [...new Set(lists.flat())]);
}

/** The known resources of the requested type the subject may act on. */
export function searchResources(g: TenantGraph, pdp: Pdp, req: SearchRequest): readonly string[] {
  const user = req.subject.id;
  const a = storedAction(req.action.name);
  const t = req.resource.type;
  if (!pdp.isUser(req.subject) || a.includes(':') || t.includes(':') || !g.hasUser(user)) return NONE;
  const ofType = new ComposedName();
  if (g.checkAny(user, a, ofType.compose(t, a) ? ofType : undefined, undefined)) return g.knownResources(t);
  return g.remember(`rs${keyOf(user, t, a)}`, () =>
    g.userPermissions(user).flatMap((p) => {
      const r = readPermission(p);
      return r.type === t && r.action === a && r.id !== undefined && r.id !== '' ? [r.id] : [];
    }),
  );
}

/** What the subject may do on the resource: global grants, the type's and the resource's. */
export function searchActions(g: TenantGraph, pdp: Pdp, req: SearchRequest): readonly string[] {
  const user = req.subject.id;
  const { type: t, id: i } = req.resource;
  if (!pdp.isUser(req.subject) || !g.hasUser(user)) return NONE;
  return g.remember(`as${keyOf(user, t, i)}`, () => [
    ...new Set(
      g.userPermissions(user).flatMap((p) => {
        const r = readPermission(p);
        // An empty action (`t:`) cannot be asked about: it is no result.
        const applies = r.type === undefined || (r.type === t && (r.id === undefined || r.id === i));
        return applies && r.action !== '' ? [r.action] : [];
      }),
    ),
  ]);
}
