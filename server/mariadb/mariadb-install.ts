// Finding, installing and initializing a MariaDB/MySQL server.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A root server process needs --user=root; only root may install packages. */
export const IS_ROOT = process.getuid?.() === 0;

const SEARCH_DIRS = ['/usr/sbin', '/usr/bin', '/usr/local/sbin', '/usr/local/bin', '/usr/libexec', '/usr/local/mysql/bin'];

export function which(names: string[]): string | null {
  const dirs = [...(process.env.PATH ?? '').split(':').filter(Boolean), ...SEARCH_DIRS];
  const executable = (p: string) => {
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  return names.flatMap((name) => dirs.map((d) => path.join(d, name))).find(executable) ?? null;
}

export function findServerBinary(): string | null {
  return which(['mariadbd', 'mysqld']);
}

/** Root with apt-get only; otherwise throws `cannot`. Starts no service. */
export function aptInstall(packages: string[], log: (l: string) => void, cannot: string): void {
  const apt = which(['apt-get']);
  if (!apt || !IS_ROOT) throw new Error(cannot);
  const names = packages.join(' ');
  log(`installing ${names} with apt-get (one time, about a minute)...`);
  // policy-rc.d exit 101 keeps packages from starting their system-wide service.
  const policy = '/usr/sbin/policy-rc.d';
  const ownPolicy = !fs.existsSync(policy);
  if (ownPolicy) fs.writeFileSync(policy, '#!/bin/sh\nexit 101\n', { mode: 0o755 });
  try {
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const upd = spawnSync(apt, ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'], env });
    if (upd.status !== 0) throw new Error(`apt-get update failed; run \`apt-get install -y ${names}\` by hand`);
    const inst = spawnSync(apt, ['install', '-y', '-qq', '--no-install-recommends', ...packages], { stdio: ['ignore', 'ignore', 'inherit'], env });
    if (inst.status !== 0) throw new Error(`apt-get install ${names} failed; run it by hand`);
  } finally {
    if (ownPolicy) fs.rmSync(policy, { force: true });
  }
  log(`${names} installed`);
}

/** Removes `dataDir` again when initialization fails. */
export function initDataDir(binary: string, dataDir: string, log: (l: string) => void): void {
  const installDb = which(['mariadb-install-db', 'mysql_install_db']);
  fs.mkdirSync(dataDir, { recursive: true });
  log(`initializing database files in ${dataDir}`);
  const asRoot = IS_ROOT ? ['--user=root'] : [];
  const installArgs = [
    '--no-defaults',
    `--datadir=${dataDir}`,
    '--auth-root-authentication-method=socket',
    `--auth-root-socket-user=${socketUser()}`,
    '--skip-test-db',
    '--skip-name-resolve',
    // A fresh Debian root may have no /etc/hosts, and install-db refuses when no name resolves.
    '--force',
    ...asRoot,
  ];
  let res = installDb ? spawnSync(installDb, installArgs, { encoding: 'utf8' }) : null;
  // Without install-db, or with one that knows none of these options (MySQL's), the server initializes the files.
  if (!res || (res.status !== 0 && /unknown (option|variable)/i.test(res.stderr + res.stdout))) {
    res = spawnSync(binary, ['--no-defaults', '--initialize-insecure', `--datadir=${dataDir}`, ...asRoot], { encoding: 'utf8' });
  }
  if (res.status !== 0) {
    fs.rmSync(dataDir, { recursive: true, force: true });
    throw new Error(`database initialization failed: ${(res.stderr || res.stdout || '').trim().split('\n').slice(-3).join(' | ')}`);
  }
}

export function socketUser(): string {
  try {
    return os.userInfo().username;
  } catch {
    return 'root';
  }
}
