/**
 * One server per contract suite (tests/contract/), every answer its clients get held to the
 * service's own /openapi.json: the file's hooks start it before the first test and stop it after
 * the last; the file's last test checks the document described every answer.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { RbacClient } from '../../src/client/index.ts';
import { OpenApiContract } from './openapi-contract.ts';
import { startServer, type RunningServer, type ServerOptions } from './server.ts';

export interface ContractServer {
  /** The file's server, from its first test on. */
  readonly server: RunningServer;
  /** A client of a new, empty tenant. */
  fresh(): RbacClient;
  /** A client without any Authorization header. */
  anon(): RbacClient;
}

export interface ContractServerOptions {
  /** Whether the server must stop with exit code 0 (default true). */
  exitCodeChecked?: boolean;
  /** What the suite writes before its first test, in the same hook: root-level before hooks of one file run concurrently. */
  prepare?: (server: RunningServer) => Promise<void>;
}

/**
 * Registers the hooks of a contract suite: its server started with `options` (and `prepare` run)
 * before the first test, stopped after the last (and then, unless told otherwise, with exit code 0).
 */
export function contractServer(options: ServerOptions = {}, { exitCodeChecked = true, prepare }: ContractServerOptions = {}): ContractServer {
  let running: RunningServer | undefined;
  before(async () => {
    running = await startServer(options);
    contract = await OpenApiContract.load(running.baseUrl);
    running.observeResponses(contract.observe);
    await prepare?.(running);
  });
  after(async () => {
    if (running !== undefined) {
      const code = await running.stop();
      if (exitCodeChecked) assert.equal(code, 0, `server exit code after SIGTERM\n${running.output().slice(-2000)}`);
    }
  });
  const server = (): RunningServer => {
    assert.ok(running !== undefined, 'the server of this suite has not started');
    return running;
  };
  return {
    get server() {
      return server();
    },
    fresh: () => server().client(),
    anon: () => server().client().withKey(undefined),
  };
}

let contract: OpenApiContract | undefined;

/**
 * The file's last test: every answer it received matches /openapi.json (status, body schema,
 * headers), and there were more than `atLeast` of them, so that the check is not vacuous.
 */
export function answersMatchTheDocument(title: string, atLeast: number): void {
  test(title, (t) => {
    assert.ok(contract !== undefined, 'no document was loaded');
    t.diagnostic(`${contract.checked} answers checked`);
    assert.ok(contract.checked > atLeast, `answers checked: ${contract.checked}`);
    assert.deepEqual(contract.violations.slice(0, 40), [], `${contract.violations.length} answers differ from the document`);
  });
}
