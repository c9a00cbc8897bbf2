import { nameOf } from './schema-names.ts';

/**
 * Moves every named schema (schema-names.ts) of a document into `components.schemas` and puts a
 * `$ref` where it was, so that generators name their types after it (Role, Grant, ErrorEnvelope).
 * The document is built from the very objects that validate and serialise; this only changes how
 * it is written out, never what it says.
 */

const REF_PREFIX = '#/components/schemas/';

type Json = unknown;

/** `doc` with its named schemas hoisted into `components.schemas` (sorted by name), beside its other components. */
export function withComponents(doc: { components?: Record<string, unknown> } & Record<string, unknown>): object {
  const schemas = new Map<string, Json>();
  const hoist = (value: Json, self?: object): Json => {
    if (Array.isArray(value)) return value.map((v) => hoist(v));
    if (value === null || typeof value !== 'object') return value;
    const name = nameOf(value);
    if (name !== undefined && value !== self) {
      if (!schemas.has(name)) schemas.set(name, hoist(value, value));
      return { $ref: REF_PREFIX + name };
    }
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, hoist(v)]));
  };
  const { components, ...rest } = doc;
  const body = hoist(rest) as Record<string, unknown>;
  const sorted = Object.fromEntries([...schemas].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return { ...body, components: { ...components, schemas: sorted } };
}
