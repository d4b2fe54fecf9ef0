// Debian packages the test setup installs when missing (as the database launcher installs
// mariadb-server), so `npm ci && npm test` is green on a fresh machine as the README promises. Not
// root or no apt: one line with the command to run, and the tests that need them fail.
import { spawnSync } from 'node:child_process';

export function aptInstall(packages: string[], why: string, log: (l: string) => void): void {
  const list = packages.join(' ');
  const apt = spawnSync('sh', ['-c', 'command -v apt-get'], { encoding: 'utf8' });
  if (apt.status !== 0 || process.getuid?.() !== 0) {
    log(`${list} missing and cannot be installed here: run \`sudo apt-get install -y ${list}\` (${why})`);
    return;
  }
  log(`installing ${list} with apt-get (${why}; one time)...`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const upd = spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  const inst = upd.status === 0 ? spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...packages], { stdio: 'inherit', env }) : upd;
  if (inst.status !== 0) log(`apt-get install ${list} failed; run it by hand (${why})`);
}
