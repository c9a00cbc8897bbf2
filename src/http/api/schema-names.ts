/**
 * The names of the schemas that recur in the API (Role, Grant, ErrorEnvelope …), kept beside
 * the schema objects rather than in them: ajv (strict) and fast-json-stringify compile the very
 * same objects, and a keyword of ours would be an unknown keyword to them. `/openapi.json` moves
 * each named object into `components.schemas` and refers to it there (openapi-components.ts).
 *
 * A name belongs to one object, by identity: a spread copy (`{ ...name, description }`) is a
 * schema of its own and stays inline where it is used.
 */

const NAMES = new Map<object, string>();
const OBJECTS = new Map<string, object>();

/** Gives `schema` its component name and returns it unchanged; a name given twice to two objects throws at load. */
export function named<T extends object>(name: string, schema: T): T {
  const before = OBJECTS.get(name);
  if (before !== undefined && before !== schema) throw new Error(`schema name ${name} is given to two schemas`);
  const other = NAMES.get(schema);
  if (other !== undefined && other !== name) throw new Error(`schema ${name} is already named ${other}`);
  NAMES.set(schema, name);
  OBJECTS.set(name, schema);
  return schema;
}

/** The component name of `schema`, when it has one. */
export function nameOf(schema: object): string | undefined {
  return NAMES.get(schema);
}
