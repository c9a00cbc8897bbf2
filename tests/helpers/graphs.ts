import type { Snapshot } from '../../src/authz/changes.ts';
import { imageOfSnapshot } from '../../src/authz/graph-image.ts';
import { TenantGraph } from '../../src/authz/graph.ts';

/** The graph a snapshot makes, built as a pool thread builds one (its image) and adopted. */
export function graphOfSnapshot(s: Snapshot): TenantGraph {
  return TenantGraph.fromImage(imageOfSnapshot(s));
}

/** Whether the graph has the role. */
export function hasRole(g: TenantGraph, role: string): boolean {
  return g.roles().includes(role);
}
