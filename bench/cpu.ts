// CPU accounting of the benchmark's processes, and the machine-independent unit `u` it is reported
// in. A process's CPU is that of its whole tree: its own utime + stime (all threads, exited ones
// included), the cutime + cstime of the children it has reaped, and the same of every live
// descendant — so a gateway that forks (a future ORBIT_PROCESSES=N) or a worker that spawns is
// counted in full. Read from /proc only before and after a measurement (never polled during it).
//
// u = the CPU MariaDB spends on one autocommit single-row INSERT of the bench's own baseline, on
// the same machine in the same run. Machines differ by 3.5× in CPU per task and throughput moves
// by 1.8× between runs on one shared machine; CPU per task in u is meant to cancel the
// machine's speed. Measured caveat (docs/benchmarks.md "CPU per task in u"): on an overloaded
// machine the unit itself moved 1.6× between three runs (64–103 µs) while CPU ms per task on the
// batch path moved 1.07×.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

let clkTck = 0;
/** Clock ticks per second of /proc/<pid>/stat times (getconf CLK_TCK; 100 on Linux). */
function ticksPerSec(): number {
  if (!clkTck) {
    try {
      clkTck = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clkTck = 100;
    }
  }
  return clkTck;
}

export interface ProcStat {
  pid: number;
  ppid: number;
  /** utime + stime of the process (all its threads), ms. */
  selfMs: number;
  /** cutime + cstime: its reaped children (and, through theirs, their descendants), ms. */
  reapedMs: number;
}

/** Parses the text of /proc/<pid>/stat (comm may hold spaces and parentheses: fields are counted
 * after the last ')'). Fields 4 ppid, 14 utime, 15 stime, 16 cutime, 17 cstime (man 5 proc). */
export function parseStat(text: string, tck = ticksPerSec()): ProcStat {
  const close = text.lastIndexOf(')');
  const f = text.slice(close + 2).split(' '); // f[0] = field 3 (state)
  const ms = (i: number) => (Number(f[i]) * 1000) / tck;
  return { pid: Number(text.slice(0, text.indexOf(' '))), ppid: Number(f[1]), selfMs: ms(11) + ms(12), reapedMs: ms(13) + ms(14) };
}

/** Every process's stat at one moment, by pid (processes that exit while it is read are left out). */
export function procTable(): Map<number, ProcStat> {
  const t = new Map<number, ProcStat>();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const s = parseStat(fs.readFileSync(`/proc/${name}/stat`, 'utf8'));
      t.set(s.pid, s);
    } catch {
      /* exited meanwhile */
    }
  }
  return t;
}

/** CPU ms of the tree rooted at `root` in a table (NaN when the root is not in it). A descendant
 * orphaned before the reading (re-parented to init) is not found: none of the bench's are. */
export function treeCpuMs(table: Map<number, ProcStat>, root: number | undefined): number {
  if (root === undefined || !table.has(root)) return NaN;
  const children = new Map<number, number[]>();
  for (const s of table.values()) {
    const c = children.get(s.ppid);
    if (c) c.push(s.pid);
    else children.set(s.ppid, [s.pid]);
  }
  let sum = 0;
  const todo = [root];
  while (todo.length) {
    const s = table.get(todo.pop()!)!;
    sum += s.selfMs + s.reapedMs;
    todo.push(...(children.get(s.pid) ?? []));
  }
  return sum;
}

/** CPU ms of each named group of process trees at one moment (a group's trees summed). */
export function cpuSnapshot<K extends string>(groups: Record<K, (number | undefined)[]>): Record<K, number> {
  const table = procTable();
  const out = {} as Record<K, number>;
  for (const k of Object.keys(groups) as K[]) out[k] = groups[k].reduce<number>((a, pid) => a + treeCpuMs(table, pid), 0);
  return out;
}

/** CPU ms per task of a scenario's processes. */
export interface CpuPerTask {
  mariadbd: number;
  gateway: number;
  workers: number;
  producers: number;
  total: number;
}

/** Per-task CPU from the CPU ms each group used over the scenario's window. */
export function cpuPerTask(used: Omit<CpuPerTask, 'total'>, tasks: number): CpuPerTask {
  const per = (ms: number) => ms / tasks;
  const c = { mariadbd: per(used.mariadbd), gateway: per(used.gateway), workers: per(used.workers), producers: per(used.producers) };
  return { ...c, total: c.mariadbd + c.gateway + c.workers + c.producers };
}

/** A task's CPU in u, split by process group. */
export interface UPerTask {
  total: number;
  db: number;
  gateway: number;
  workers: number;
  producers: number;
}

/** CPU per task (ms) in u, given the baseline's MariaDB CPU per autocommit INSERT (µs); NaN
 * throughout when the baseline CPU is unknown or zero. */
export function uPerTask(cpu: CpuPerTask, baselineInsertCpuUs: number): UPerTask {
  const u = (ms: number) => (baselineInsertCpuUs > 0 ? (ms * 1000) / baselineInsertCpuUs : NaN);
  return { total: u(cpu.total), db: u(cpu.mariadbd), gateway: u(cpu.gateway), workers: u(cpu.workers), producers: u(cpu.producers) };
}
