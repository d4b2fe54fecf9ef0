// The Go SDK (worker-sdk-go/: the worker package orbit, the HTTP client, the fenced resource)
// tested by its own `go vet` and `go test -race` against a real gateway and MariaDB started here,
// and a short fuzz run of its frame decoder. The Go tests that need the gateway read the
// ORBIT_TEST_* variables below and fail (never skip) without them.
import { describe, expect, it } from 'vitest';
import { useGatewayFixture } from './support/fixture.js';
import { goMysqlDsn, runGo } from './support/go.js';

const f = useGatewayFixture();

function goTestEnv(): Record<string, string> {
  return {
    ORBIT_TEST_URL: f.gw.url,
    ORBIT_TEST_TOKEN: f.t.token,
    ORBIT_TEST_QUEUE_ID: f.t.queue_id,
    ORBIT_TEST_MYSQL_DSN: goMysqlDsn(f.db.dsn),
  };
}

describe('Go SDK (worker-sdk-go)', () => {
  it('go vet ./... is clean', async () => {
    const r = await runGo(['vet', './...'], { timeoutMs: 180_000 });
    expect(r.code, r.output).toBe(0);
  }, 200_000);

  it('go test -race -count=1 ./... passes against the gateway', async () => {
    // A cold build cache (npm test without .ci/run, which warms it) compiles the standard library
    // with the race detector first: minutes on two cores, hence the long bound.
    const r = await runGo(['test', '-race', '-count=1', '-timeout=280s', './...'], { env: goTestEnv(), timeoutMs: 290_000 });
    expect(r.code, r.output).toBe(0);
    // Every package ran tests (a package that compiled no test would print "no test files").
    expect(r.output).toMatch(/^ok\s+github\.com\/orbit-tasks\/orbit\/worker-sdk-go\s/m);
    expect(r.output).toMatch(/^ok\s+github\.com\/orbit-tasks\/orbit\/worker-sdk-go\/client\s/m);
    expect(r.output).toMatch(/^ok\s+github\.com\/orbit-tasks\/orbit\/worker-sdk-go\/fenced\s/m);
  }, 300_000);

  it('fuzzes the frame decoder for 10 s without a failure', async () => {
    const r = await runGo(['test', '-run=^$', '-fuzz=^FuzzDecodeFrame$', '-fuzztime=10s', '.'], { timeoutMs: 170_000 });
    expect(r.code, r.output).toBe(0);
    expect(r.output).toMatch(/fuzz: elapsed/);
  }, 180_000);
});
