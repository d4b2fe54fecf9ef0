import { defineConfig } from 'vitest/config';

export default defineConfig({
  // An explicit host keeps vite from resolving "localhost" at start-up: a fresh Debian root
  // (debootstrap) has no /etc/hosts, and that lookup alone failed the whole run.
  server: { host: '127.0.0.1' },
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // Integration tests spawn gateway processes and a shared MariaDB; two cores.
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
  },
});
