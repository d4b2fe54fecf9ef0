// One `npm start` per ORBIT_HOME. proper-lockfile (an mkdir-based lock refreshed while held, so a
// lock left by a process killed with -9 goes stale and is taken over) is taken before the embedded
// database starts: two starts at the same instant can no longer run two servers on one data
// directory. The second one waits briefly (the first may be a process that just died) and then
// stops with one line.
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
      // Losing the lock (the home folder removed, the clock jumped) must not crash a running gateway.
      onCompromised: () => {},
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ELOCKED') {
      throw new Error(`another npm start is running on ${home} (lock ${target}.lock); stop it first, or set ORBIT_HOME to another folder`);
    }
    throw err;
  }
}
