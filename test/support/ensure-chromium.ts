// The console tests drive Debian's Chromium. Like the test database (whose launcher installs
// mariadb-server when no server exists), a missing browser is installed here, once, before any
// test runs, so `npm ci && npm test` is green on a fresh Debian machine as the README promises.
// Not root or no apt: the console tests then fail with the exact command to run.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

export function ensureChromium(executable: string, log: (l: string) => void): void {
  if (fs.existsSync(executable) || process.env.ORBIT_CHROMIUM) return;
  const apt = spawnSync('sh', ['-c', 'command -v apt-get'], { encoding: 'utf8' });
  if (apt.status !== 0 || process.getuid?.() !== 0) {
    log(`${executable} is missing and cannot be installed here: run \`sudo apt-get install -y chromium\` (the console tests need it)`);
    return;
  }
  log('installing chromium with apt-get for the console tests (one time, about a minute)...');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const upd = spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  const inst = upd.status === 0 ? spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'chromium'], { stdio: 'inherit', env }) : upd;
  if (inst.status !== 0) log('apt-get install chromium failed; run it by hand (the console tests need it)');
}
