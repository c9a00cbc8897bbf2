import { metadataDocument, metadataPath, WELL_KNOWN } from '../../authzen/metadata.ts';
import { appError } from '../../errors/index.ts';
import type { EngineRequest, EngineResponse } from '../engine/port.ts';
import type { Reply } from '../reply/reply.ts';
import type { RouteTable } from './route-table.ts';

const CACHE: ReadonlyArray<readonly [string, string]> = [['Cache-Control', 'public, max-age=300']];

/**
 * `GET /.well-known/authzen-configuration` (docs/authzen.md), and the same with the base URL's
 * path after it when it has one (the RFC 8615 form): the document is built once from AUTH_AUTHZEN_BASE_URL, never from the request.
 * Without the setting the route answers 404 naming it.
 */
export function registerAuthzenMetadata(routes: RouteTable, reply: Reply, base: string | undefined, series: number): void {
  if (base === undefined) {
    const missing = appError('ERR_AUTHZEN_NOT_CONFIGURED');
    const notConfigured = (res: EngineResponse, req: EngineRequest): void => reply.error(reply.target(res, req, '', series), missing, undefined);
    routes.on('GET', WELL_KNOWN, notConfigured);
    return;
  }
  const body = metadataDocument(base);
  const paths = new Set([WELL_KNOWN, metadataPath(base)]);
  for (const path of paths) {
    routes.on('GET', path, (res, req) => reply.send(reply.target(res, req, '', series), 200, body, undefined, CACHE));
    routes.on('HEAD', path, (res, req) => head(reply, res, req));
  }
}

/** HEAD: the headers of the document, without it. */
function head(reply: Reply, res: EngineResponse, req: EngineRequest): void {
  reply.head(reply.target(res, req, ''), CACHE);
}
