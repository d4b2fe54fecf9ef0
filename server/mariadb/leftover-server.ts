// A private server left running by an earlier run that was killed with -9: the child outlives its
// parent and keeps holding the data directory.
import fs from 'node:fs';
import path from 'node:path';

function procArgs(pid: number): string[] | null {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return null;
  }
}

/** The fields of /proc/<pid>/stat after "pid (comm)", state and ppid first; comm may hold spaces,
 * so they are split after its ')'. Null when there is no such entry. */
function procStat(pid: number): string[] | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** A zombie counts as gone. */
export function isAlive(pid: number): boolean {
  const stat = procStat(pid);
  if (stat) return stat[0] !== 'Z';
  // No /proc entry: gone, unless there is no /proc at all; then the kernel is asked.
  if (fs.existsSync('/proc/self/stat')) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The pid the server of `dataDir` wrote at its start; null without one. */
export function serverPid(dataDir: string): number | null {
  let pid = NaN;
  try {
    pid = Number(fs.readFileSync(path.join(dataDir, 'mysqld.pid'), 'utf8').trim());
  } catch {
    /* no pid file */
  }
  return Number.isInteger(pid) && pid > 1 ? pid : null;
}

/** Stops a leftover server whose launcher is gone; refuses when its launcher still runs. */
export async function stopLeftoverServer(dataDir: string, files: string, log: (l: string) => void): Promise<void> {
  const pid = serverPid(dataDir);
  if (pid === null || pid === process.pid) return;
  const args = procArgs(pid);
  if (!args || !args.includes(`--datadir=${files}`)) return; // gone, or the pid was reused
  const ppid = Number(procStat(pid)?.[1]);
  const parentArgs = ppid > 1 ? procArgs(ppid) : null;
  if (ppid !== process.pid && parentArgs && parentArgs.some((a) => /start-embedded|global-setup|vitest|bench/.test(a))) {
    throw new Error(`the database in ${dataDir} is in use by another orbit process (pid ${ppid}); stop it first`);
  }
  log(`stopping a database server left running by an earlier run (pid ${pid})`);
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  const until = Date.now() + 30_000;
  while (isAlive(pid) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
  if (isAlive(pid)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
    while (isAlive(pid)) await new Promise((r) => setTimeout(r, 50));
  }
}
