/**
 * The typed client's types are generated from /openapi.json (support/client-types.ts), never
 * written by hand: the committed file must be exactly what the generator writes from the route
 * table now, so that a schema changed without `npm run generate:client` fails here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clientTypesCurrent } from '../../../support/client-types.ts';

test('src/client/openapi.generated.ts is what npm run generate:client writes from the schemas now', async () => {
  assert.ok(await clientTypesCurrent(), 'src/client/openapi.generated.ts is stale: run npm run generate:client');
});
