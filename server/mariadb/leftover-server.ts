// A private server left running by an earlier run: a child outlives a SIGKILLed parent and keeps
// holding its data directory. Found from the pid file and /proc, stopped when its launcher is gone,
// refused when another orbit process still uses the folder.
import fs from 'node:fs';
import path from 'node:path';

function procArgs(pid: number): string[] | null {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return null;
  }
}

function parentPid(pid: number): number | null {
  try {
    // /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may hold spaces, so split after ')'.
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return null;
  }
}

/** True while `pid` runs (a zombie waiting for a parent that never reaps it counts as gone). */
function isAlive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    /* no /proc entry: gone (or no /proc at all: ask the kernel) */
  }
  if (!fs.existsSync('/proc/self/stat')) {
    try {
      process.kill(pid, 0);
      return true;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'EPERM';
    }
  }
  return false;
}

/**
 * A server from an earlier run that was killed with -9 keeps running (a child outlives a SIGKILLed
 * parent) and holds the data directory. When the pid file names a live server on this data
 * directory whose launcher is gone, stop it; when its launcher is still alive, another orbit is
 * using this folder and starting a second server on it would fail or corrupt it: refuse.
 */
export async function stopLeftoverServer(dataDir: string, files: string, log: (l: string) => void): Promise<void> {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(path.join(dataDir, 'mysqld.pid'), 'utf8').trim());
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid) return;
  const args = procArgs(pid);
  if (!args || !args.includes(`--datadir=${files}`)) return; // gone, or the pid was reused
  const ppid = parentPid(pid);
  const parentArgs = ppid && ppid > 1 ? procArgs(ppid) : null;
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
