// Helpers for the tests of `npm start` (start-embedded): which database servers run on a data
// directory, whether a pid is alive, polling.
import fs from 'node:fs';
import path from 'node:path';
import { waitForValue } from './wait.js';

/** Pids of database servers whose command line names a data directory under `home`. */
export function serversUnder(dir: string): number[] {
  const out: number[] = [];
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    let cmd: string;
    try {
      cmd = fs.readFileSync(`/proc/${e}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    const args = cmd.split('\0');
    if (!/mariadbd|mysqld/.test(path.basename(args[0] ?? ''))) continue;
    if (args.some((a) => a.startsWith('--datadir=') && a.slice('--datadir='.length).startsWith(dir))) out.push(Number(e));
  }
  return out;
}

/** Running (not gone, not a zombie). */
export function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Whether `cond` holds within `ms` (checked every 100 ms, and once more at the end); never throws for time. */
export async function waitUntil(cond: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  return waitForValue(
    async () => cond(),
    (v) => v,
    { timeout: ms, interval: 100 },
  );
}
