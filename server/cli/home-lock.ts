// One `npm start` per ORBIT_HOME, so that two servers never run on one data directory. The lock is
// refreshed while held, so one left by a killed process goes stale and is taken over; the second
// start waits briefly, since the first may be a process that just died.
import fs from 'node:fs';
import path from 'node:path';
import lockfile from 'proper-lockfile';

const STALE_MS = 5_000;

export async function lockHome(home: string): Promise<() => Promise<void>> {
  fs.mkdirSync(home, { recursive: true });
  const target = path.join(home, 'start');
  fs.writeFileSync(target, '', { flag: 'a' });
  try {
    return await lockfile.lock(target, {
      stale: STALE_MS,
      retries: { retries: 8, minTimeout: 250, maxTimeout: 1000, factor: 1.5 },
      realpath: false,
      // Losing the lock (the folder removed, the clock jumped) must not crash a running gateway.
      onCompromised: () => {},
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ELOCKED') {
      throw new Error(`another npm start is running on ${home} (lock ${target}.lock); stop it first, or set ORBIT_HOME to another folder`);
    }
    throw err;
  }
}
