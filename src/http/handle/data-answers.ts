import type { TenantGraph } from '../../authz/graph.ts';
import { previewAsync, PreviewOutdatedError } from '../../authz/preview.ts';
import { positionAfter, type ExportPosition, type ExportRow, type ImportDone } from '../../authz/transfer.ts';
import { AppError, fromWire } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import { formatInstant } from '../../time/instant.ts';
import type { DataRoute } from '../api/route-types.ts';
import type { Backend } from '../backend.ts';
import type { BodyResult } from '../input/body.ts';
import type { ImportAsked } from '../input/import-body.ts';
import type { Query } from '../input/query.ts';
import { corked, type Reply, type TenantTarget } from '../reply/reply.ts';
import type { Answers } from './answers.ts';

/** Rows read per export page: one read transaction each, about 100 KiB of NDJSON. */
const PAGE_ROWS = 1000;
/** How often a held-back stream looks whether its caller went away (no writable event comes then). */
const ABORT_POLL_MS = 1000;
/** A dry run starts again this often at most when a write lands between its read and its preview. */
const DRY_ATTEMPTS = 3;

const bounds = (nb: number | null, exp: number | null): object => ({
  ...(nb === null ? {} : { not_before: formatInstant(nb) }),
  ...(exp === null ? {} : { expires_at: formatInstant(exp) }),
});

/** One export line. */
function lineOf(row: ExportRow): string {
  switch (row[0]) {
    case 'role':
      return JSON.stringify({ type: 'role', role: row[1], description: row[2] });
    case 'permission':
      return JSON.stringify({ type: 'permission', role: row[1], permission: row[2], ...bounds(row[3], row[4]) });
    case 'membership':
      return JSON.stringify({ type: 'membership', user: row[2], role: row[1], ...bounds(row[3], row[4]) });
  }
}

/** The graph at `revision` or later (see SlowPath.graphAtLeast). */
export type GraphAtLeast = (t: TenantTarget, revision: number) => Promise<TenantGraph | AppError>;

/**
 * GET /api/export and POST /api/import (docs/api.md §17). The export is read page by page,
 * each page in one transaction with the revision, and written as it is read, waiting whenever
 * the engine holds bytes back: memory stays one page whatever the client's size, and the event
 * loop is free between pages. The pages are one snapshot as long as the revision stays the
 * revision of the header; if a write lands meanwhile the answer cannot be that snapshot any
 * more, and its connection is closed before the end (a cut transfer, which every HTTP client
 * reports), never completed as if whole.
 */
export class DataAnswers {
  readonly #backend: Backend;
  readonly #answers: Answers;
  readonly #reply: Reply;
  readonly #log: Logger;
  readonly #graphAtLeast: GraphAtLeast;

  constructor(backend: Backend, answers: Answers, reply: Reply, log: Logger, graphAtLeast: GraphAtLeast) {
    this.#backend = backend;
    this.#answers = answers;
    this.#reply = reply;
    this.#log = log;
    this.#graphAtLeast = graphAtLeast;
  }

  answer(t: TenantTarget, route: DataRoute, query: Query, body: Promise<BodyResult> | undefined): Promise<void> {
    return route.id === 'export' ? this.#export(t, route) : this.#import(t, route, query, body);
  }

  async #export(t: TenantTarget, route: DataRoute): Promise<void> {
    let page = await this.#backend.exportPage(t.tenant, undefined, PAGE_ROWS);
    const revision = page.revision;
    const header = JSON.stringify({ format: 'rbac-gateway.export', version: 1, revision, exported_at: formatInstant(Date.now() * 1000) });
    const res = t.res;
    if (res.write === undefined) return this.#exportWhole(t, route, header, page.rows);
    corked(t, () => this.#reply.openStream(t, route.status, 'application/x-ndjson', revision));
    await this.#write(t, `${header}\n`);
    for (;;) {
      if (t.aborted) return;
      if (page.revision !== revision) return this.#cut(t, revision, page.revision);
      if (page.rows.length > 0) await this.#write(t, `${page.rows.map(lineOf).join('\n')}\n`);
      const last = page.rows.at(-1);
      if (page.rows.length < PAGE_ROWS || last === undefined) break;
      page = await this.#backend.exportPage(t.tenant, positionAfter(last), PAGE_ROWS);
    }
    corked(t, () => res.end(''));
  }

  /** An engine that cannot stream (a request only node:http's fallback parser read): the export gathered whole. */
  async #exportWhole(t: TenantTarget, route: DataRoute, header: string, first: readonly ExportRow[]): Promise<void> {
    const lines = [header, ...first.map(lineOf)];
    let after: ExportPosition | undefined = first.length === PAGE_ROWS ? positionAfter(first.at(-1) as ExportRow) : undefined;
    while (after !== undefined) {
      const page = await this.#backend.exportPage(t.tenant, after, PAGE_ROWS);
      lines.push(...page.rows.map(lineOf));
      after = page.rows.length === PAGE_ROWS ? positionAfter(page.rows.at(-1) as ExportRow) : undefined;
    }
    corked(t, () => {
      this.#reply.openStream(t, route.status, 'application/x-ndjson', Number(JSON.parse(header).revision));
      t.res.end(`${lines.join('\n')}\n`);
    });
  }

  /** Writes `text` and resolves once the engine can take more (or the caller went away). */
  #write(t: TenantTarget, text: string): Promise<void> {
    const res = t.res;
    let accepted = true;
    corked(t, () => {
      accepted = res.write?.(text) ?? true;
    });
    if (accepted || t.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const poll = setInterval(() => {
        if (!t.aborted) return;
        clearInterval(poll);
        resolve();
      }, ABORT_POLL_MS);
      res.onWritable?.(() => {
        clearInterval(poll);
        resolve();
        return true;
      });
    });
  }

  #cut(t: TenantTarget, revision: number, now: number): void {
    this.#log.warn('export cut: the client changed while it was read', { request_id: t.requestId, revision, now });
    corked(t, () => t.res.close?.());
  }

  async #import(t: TenantTarget, route: DataRoute, query: Query, body: Promise<BodyResult> | undefined): Promise<void> {
    const b = body === undefined ? undefined : await body;
    if (b?.error !== undefined) {
      const revision = await this.#backend.revision(t.tenant);
      return corked(t, () => this.#reply.error(t, b.error, revision, b.close));
    }
    const asked = b?.value as ImportAsked;
    const audit = t.audit === undefined || asked.dry ? undefined : { ...t.audit.draft, status: route.status };
    for (let attempt = 1; ; attempt++) {
      const request = { tenant: t.tenant, mode: asked.mode, file: asked.file, ifMatch: query.ifMatch, audit, dry: asked.dry };
      const done = await this.#backend.importData(request);
      if (!done.ok) return corked(t, () => this.#reply.error(t, fromWire(done.error), done.revision));
      const counts = { revision: done.revision, roles: done.roles, permissions: done.permissions, memberships: done.memberships };
      const data = { ...counts, added: done.added, removed: done.removed };
      if (!asked.dry) {
        // Nothing committed, so no row committed with it: the request is audited all the same.
        if (!done.changed && t.audit !== undefined) this.#backend.recordAudit(t.audit.row(route.status));
        return corked(t, () => this.#reply.send(t, route.status, this.#answers.envelope(route, data), done.revision));
      }
      const preview = await this.#preview(t, done);
      if (preview === 'outdated' && attempt < DRY_ATTEMPTS) continue;
      if (preview === 'outdated' || preview instanceof AppError) {
        const error = preview instanceof AppError ? preview : new AppError('ERR_CONSISTENCY_REVISION_TIMEOUT', 'the client kept changing during the dry run');
        return corked(t, () => this.#reply.error(t, error, done.revision));
      }
      const { gained, lost, gained_count, lost_count, truncated } = preview;
      const text = this.#answers.envelope({ ...route, data: 'importPreview' }, { ...data, dry_run: true, gained, lost, gained_count, lost_count, truncated });
      return corked(t, () => this.#reply.send(t, route.status, text, done.revision));
    }
  }

  /** The pairs a dry import would change, from the graph at the revision the store read ('outdated' when the graph moved past it). */
  async #preview(t: TenantTarget, done: ImportDone): Promise<Awaited<ReturnType<typeof previewAsync>> | AppError | 'outdated'> {
    const g = await this.#graphAtLeast(t, done.revision);
    if (g instanceof AppError) return g;
    if (g.revision !== done.revision) return 'outdated';
    try {
      return await previewAsync(g, done.changes ?? [], Date.now() * 1000);
    } catch (err) {
      if (err instanceof PreviewOutdatedError) return 'outdated';
      throw err;
    }
  }
}
