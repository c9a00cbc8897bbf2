/**
 * Holds every answer a suite receives to the service's own `/openapi.json`: the status must be one
 * the document lists for that operation, the body must match its schema, and the headers named in
 * docs/api.md §13 must be sent exactly where the document says (required ones present, none sent
 * undocumented, values of their schema). So the document cannot drift from the service again.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { ApiResult } from '../../src/client/index.ts';

interface HeaderObject {
  required?: boolean;
  schema: object;
}
interface ResponseObject {
  headers?: Record<string, HeaderObject>;
  content?: Record<string, { schema: object }>;
}
interface Operation {
  operationId: string;
  responses: Record<string, ResponseObject>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, object> };
}

const REF = '#/components/schemas/';

/** `schema` with every `$ref` to a component replaced by the component itself (they are trees: no cycle). */
function inlined(schema: unknown, components: Record<string, object>): unknown {
  if (Array.isArray(schema)) return schema.map((s) => inlined(s, components));
  if (schema === null || typeof schema !== 'object') return schema;
  const ref = (schema as { $ref?: unknown }).$ref;
  if (typeof ref === 'string') {
    const target = ref.startsWith(REF) ? components[ref.slice(REF.length)] : undefined;
    if (target === undefined) throw new Error(`$ref ${ref} leads to no component`);
    return inlined(target, components);
  }
  return Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, inlined(v, components)]));
}

/** The response headers the document must account for wherever they are sent. */
const NAMED_HEADERS = ['x-request-id', 'x-authz-revision', 'retry-after', 'www-authenticate', 'allow'];

interface PathMatcher {
  readonly template: string;
  readonly pattern: RegExp;
}

export class OpenApiContract {
  readonly #doc: Document;
  readonly #paths: PathMatcher[];
  readonly #ajv = new Ajv2020({ strict: false, allErrors: true });
  readonly #compiled = new Map<object, ValidateFunction>();
  /** Every mismatch seen so far, one line each. */
  readonly violations: string[] = [];
  /** How many answers were held to the document. */
  checked = 0;

  constructor(doc: Document) {
    this.#doc = doc;
    this.#paths = Object.keys(doc.paths).map((template) => ({
      template,
      pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
    }));
  }

  static async load(baseUrl: string): Promise<OpenApiContract> {
    return new OpenApiContract((await (await fetch(`${baseUrl}/openapi.json`)).json()) as Document);
  }

  /** For RbacClient's `onResponse`. */
  readonly observe = (method: string, path: string, res: ApiResult<unknown>): void => {
    const where = `${method} ${path} → ${res.status}`;
    for (const problem of this.#problems(method, path.split('?')[0] ?? path, res)) this.violations.push(`${where}: ${problem}`);
    this.checked++;
  };

  #problems(method: string, path: string, res: ApiResult<unknown>): string[] {
    const template = this.#paths.find((p) => p.pattern.test(path))?.template;
    // Unknown paths are answered before any route: 404 with the error envelope.
    if (template === undefined) return res.status === 404 ? [] : [`a path the document does not name answered ${res.status}`];
    const item = this.#doc.paths[template] ?? {};
    const op = item[method.toLowerCase()] ?? (method === 'HEAD' ? item.get : undefined);
    if (op === undefined) {
      // A method the path does not take: the 405 every operation of the path documents.
      const wrongMethod = Object.values(item)[0]?.responses['405'];
      if (res.status !== 405 || wrongMethod === undefined) return [`a method the path does not take answered ${res.status}`];
      return this.#headerProblems(res, wrongMethod);
    }
    const response = op.responses[String(res.status)];
    if (response === undefined) return [`status ${res.status} is not documented for ${op.operationId}`];
    const problems = this.#headerProblems(res, response);
    const schema = response.content?.['application/json']?.schema;
    if (schema !== undefined && method !== 'HEAD') {
      const validate = this.#validator(schema);
      if (!validate(res.body)) problems.push(`body does not match the schema: ${this.#ajv.errorsText(validate.errors)}`);
    }
    return problems;
  }

  #headerProblems(res: ApiResult<unknown>, response: ResponseObject): string[] {
    const problems: string[] = [];
    const documented = new Map(Object.entries(response.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
    for (const [name, header] of documented) {
      const value = res.headers.get(name);
      if (value === null) {
        if (header.required === true) problems.push(`required header ${name} is missing`);
        continue;
      }
      const validate = this.#validator(header.schema);
      if (!validate(value)) problems.push(`header ${name}: ${JSON.stringify(value)} ${this.#ajv.errorsText(validate.errors)}`);
    }
    for (const name of NAMED_HEADERS) if (res.headers.get(name) !== null && !documented.has(name)) problems.push(`header ${name} is sent but not documented`);
    return problems;
  }

  #validator(schema: object): ValidateFunction {
    let v = this.#compiled.get(schema);
    if (v === undefined) {
      v = this.#ajv.compile(inlined(schema, this.#doc.components?.schemas ?? {}) as object);
      this.#compiled.set(schema, v);
    }
    return v;
  }
}
