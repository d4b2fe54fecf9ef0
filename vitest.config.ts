import { defineConfig } from 'vitest/config';

// Three layers, all run by a plain `vitest run` (`npm test`), each alone by
// `vitest run --project NAME` (`npm run test:unit` / `test:contract` / `test:chaos`):
//   unit      pure code and in-process fakes: no database, no gateway process; seconds.
//   contract  the bulk: a real MariaDB (the global setup), real gateways in or out of process.
//   chaos     processes killed (-9) and restarted, databases restarted, whole `npm start`s.
// A file not named in UNIT or CHAOS is a contract test, so a new file gets the database by default.
const UNIT = [
  'test/unit-pure.test.ts',
  'test/unit-coalesce.test.ts',
  'test/unit-config.test.ts',
  'test/unit-admission.test.ts',
  'test/errors-doc.test.ts',
  'test/api-docs-lint.test.ts',
  'test/docs-links.test.ts',
  'test/schedules-calendar.test.ts',
  'test/sdk-worker.test.ts',
  'test/sdk-protocol-checks.test.ts',
  'test/sdk-vectors.test.ts',
  'test/sdk-http-client.test.ts',
  'test/workflows-validate.test.ts',
  'test/workflows-advance.test.ts',
  'test/workflows-layout.test.ts',
  'test/unit-bench-cpu.test.ts',
  'test/unit-claim-specs.test.ts',
  'test/unit-session-slots.test.ts',
];
const CHAOS = [
  'test/chaos-*.test.ts',
  'test/keys-fenced-chaos.test.ts',
  'test/keys-invariants.test.ts',
  'test/keys-invariants-claims.test.ts',
  'test/schedules-chaos.test.ts',
  'test/embedded-start.test.ts',
  'test/embedded-local.test.ts',
];
// Only the projects that need the database name the global setup: vitest runs a project's global
// setup only when one of its files runs, so `--project unit` starts no MariaDB. The setup shares
// one server between the projects of a run (test/support/global-setup.ts).
const DB_SETUP = ['test/support/global-setup.ts'];

export default defineConfig({
  // An explicit host keeps vite from resolving "localhost" at start-up: a fresh Debian root
  // (debootstrap) has no /etc/hosts, and that lookup alone failed the whole run.
  server: { host: '127.0.0.1' },
  test: {
    // One forks pool serves every project: these limits are for the whole run, not per project.
    // Integration tests spawn gateway processes and a shared MariaDB; two cores.
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
    projects: [
      { extends: true, test: { name: 'unit', include: UNIT } },
      { extends: true, test: { name: 'contract', include: ['test/**/*.test.ts'], exclude: [...UNIT, ...CHAOS], globalSetup: DB_SETUP } },
      { extends: true, test: { name: 'chaos', include: CHAOS, globalSetup: DB_SETUP } },
    ],
  },
});
