// The usual per-file setup of the integration tests: one fresh database, one real gateway process
// and (by default) one tenant, created in beforeAll; torn down in afterAll, which also enforces the
// team rule that a test file fails when it leaks: raw worker sockets still open, gateway or SDK
// worker processes still running, or connections still checked out of the file's pool.
//
//   const f = useGatewayFixture({ gatewayEnv: { ORBIT_MAX_FRAME_BYTES: '310000' } });
//   it('...', async () => { await call(f.gw.url, 'GET', '/v1/queues', { token: f.t.token }); });
//
// More gateways (other settings, other nodes) can be started in the file's own beforeAll with
// startGateway(f.db.dsn, ...): the fixture's afterAll stops every gateway the file started.
import { afterAll, beforeAll } from 'vitest';
import type { CredentialsFile } from '../../server/admin/bootstrap.js';
import { createTestDb, newTenant, type TestDb } from './db.js';
import { assertNoGatewaysRunning, startGateway, stopAllGateways, type GatewayProcess } from './gateway.js';
import { assertNoOpenRawSockets, type RawWorker } from './raw-worker.js';
import { assertNoWorkersRunning, killAllWorkers } from './workers.js';

export interface GatewayFixtureOptions {
  /** Extra environment of the gateway process. */
  gatewayEnv?: Record<string, string>;
  /** Queues of the tenant (default: ['initial']). */
  queues?: string[];
  /** false: no tenant (the tests create their own); reading `t` then throws. */
  tenant?: boolean;
  /** The gateway's entry (default dist/server/cli/orbit.js), e.g. test/support/faults.ts's FAULT_GATEWAY. */
  script?: string;
}

export interface GatewayFixture {
  readonly db: TestDb;
  readonly gw: GatewayProcess;
  readonly t: CredentialsFile;
  /** Raw workers a test opened, for the file to close after each test (dispatch-fixture's closeWorkers). */
  workers: RawWorker[];
}

/** Registers the beforeAll/afterAll hooks; the getters are valid from beforeAll on. */
export function useGatewayFixture(opts: GatewayFixtureOptions = {}): GatewayFixture {
  let db: TestDb | undefined;
  let gw: GatewayProcess | undefined;
  let t: CredentialsFile | undefined;
  let stopping = false;

  beforeAll(async () => {
    db = await createTestDb();
    const g = await startGateway(db.dsn, opts.gatewayEnv, 0, opts.script);
    gw = g;
    // A gateway that dies mid-file fails every later test: say why, once.
    g.child.once('exit', (code, signal) => {
      if (!stopping) process.stderr.write(`gateway exited unexpectedly (${code ?? signal}):\n${g.output.slice(-40).join('\n')}\n`);
    });
    if (opts.tenant !== false) t = await newTenant(db, opts.queues ? { queues: opts.queues } : {});
  });

  afterAll(async () => {
    stopping = true;
    await endOfFileChecks(db);
  });

  const need = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`useGatewayFixture: ${what} is not set up (read it in a hook or test, after beforeAll)`);
    return v;
  };
  return {
    get db() {
      return need(db, 'db');
    },
    get gw() {
      return need(gw, 'gw');
    },
    get t() {
      return need(t, opts.tenant === false ? 't (the fixture was created with tenant: false)' : 't');
    },
    workers: [],
  };
}

/**
 * The end-of-file teardown and leak checks, for files that do their own setup (call from afterAll):
 * closes leaked raw sockets, kills SDK workers and gateways, drops the database (if given), then
 * fails with every leak it found. Cleanup always runs to the end so later files start clean.
 */
export async function endOfFileChecks(db?: TestDb): Promise<void> {
  const problems: string[] = [];
  const check = async (fn: () => Promise<void>) => {
    try {
      await fn();
    } catch (e) {
      problems.push((e as Error).message);
    }
  };
  await check(() => assertNoOpenRawSockets());
  await check(async () => {
    await killAllWorkers();
    await assertNoWorkersRunning();
  });
  await check(async () => {
    await stopAllGateways();
    await assertNoGatewaysRunning();
  });
  if (db) await check(() => db.drop());
  if (problems.length > 0) throw new Error(`leaks at the end of the file:\n${problems.join('\n')}`);
}
