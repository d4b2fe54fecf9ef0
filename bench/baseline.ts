// The bare-database baseline on the same durable server as the scenarios, at the gateway's
// connection count: single-row INSERTs, either autocommit (one statement = one commit: the
// headline baseline) or as START TRANSACTION; INSERT; COMMIT (three round trips per commit).
// Warmed up first, then repeated in timed rounds; the median round is the reported figure.
// MariaDB's CPU is read around each round too: the autocommit form's CPU per row is the bench's
// unit `u` (bench/cpu.ts).
import mysql from 'mysql2/promise';
import { cpuSnapshot } from './cpu.js';
import { dbDelta, dbPerUnit, dbStatus, type DbStatus } from './counters.js';
import { median } from './stats.js';

export type BaselineMode = 'autocommit' | 'transaction';

export interface BaselineOptions {
  connections: number;
  warmupMs: number;
  roundMs: number;
  rounds: number;
}

export interface BaselineResult {
  mode: BaselineMode;
  connections: number;
  /** Rows (= commits) per second of each timed round, in order. */
  roundsPerSec: number[];
  /** The reported figure: the median round. */
  medianPerSec: number;
  bestPerSec: number;
  rows: number;
  /** The counting method checked on the baseline itself: expect 1 / 1 (autocommit), 3 / 1. */
  statementsPerRow: number;
  commitsPerRow: number;
  /** MariaDB CPU (its process tree's utime + stime) per row of each timed round, µs. */
  roundsCpuUsPerRow: number[];
  /** Their median: for autocommit, `baseline_insert_cpu_us`, the unit u. */
  cpuUsPerRow: number;
}

async function round(conns: mysql.Connection[], mode: BaselineMode, ms: number, counter: { next: number }): Promise<{ rows: number; secs: number }> {
  let rows = 0;
  const started = performance.now();
  const until = started + ms;
  await Promise.all(
    conns.map(async (c) => {
      while (performance.now() < until) {
        const v = counter.next++;
        if (mode === 'autocommit') {
          await c.query('INSERT INTO bench_baseline (v) VALUES (?)', [v]);
        } else {
          await c.query('START TRANSACTION');
          await c.query('INSERT INTO bench_baseline (v) VALUES (?)', [v]);
          await c.query('COMMIT');
        }
        rows++;
      }
    }),
  );
  return { rows, secs: (performance.now() - started) / 1000 };
}

/** Both baselines on the same 16 connections: a warm-up of each, then their timed rounds
 * alternated (autocommit, transaction, autocommit, …) so that load from outside the benchmark
 * hits both alike. Status counters are read around each round (and the bench's reads subtracted). */
export async function baselines(
  db: mysql.ConnectionOptions,
  o: BaselineOptions,
  overhead: DbStatus,
  mariadbPid: number | undefined,
): Promise<Record<BaselineMode, BaselineResult>> {
  const setup = await mysql.createConnection(db);
  await setup.query(
    "CREATE TABLE IF NOT EXISTS bench_baseline (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY COMMENT 'row', v INT NOT NULL COMMENT 'value') ENGINE=InnoDB COMMENT='benchmark baseline rows'",
  );
  const conns = await Promise.all(Array.from({ length: o.connections }, () => mysql.createConnection(db)));
  const counter = { next: 0 };
  const modes: BaselineMode[] = ['autocommit', 'transaction'];
  const acc = new Map(modes.map((m) => [m, { rates: [] as number[], cpuUs: [] as number[], rows: 0, statements: 0, commits: 0 }]));
  try {
    for (const mode of modes) await round(conns, mode, o.warmupMs, counter);
    for (let i = 0; i < o.rounds; i++) {
      for (const mode of modes) {
        const before = await dbStatus(setup);
        // Inside the status pair, so the two status reads are not in MariaDB's CPU of the round.
        const cpu0 = cpuSnapshot({ db: [mariadbPid] }).db;
        const r = await round(conns, mode, o.roundMs, counter);
        const cpu1 = cpuSnapshot({ db: [mariadbPid] }).db;
        const per = dbPerUnit(dbDelta(before, await dbStatus(setup), overhead), 1);
        const a = acc.get(mode)!;
        a.rates.push(r.rows / r.secs);
        a.cpuUs.push(((cpu1 - cpu0) * 1000) / r.rows);
        a.rows += r.rows;
        a.statements += per.statements;
        a.commits += per.commits;
      }
    }
  } finally {
    await Promise.all(conns.map((c) => c.end()));
    await setup.query('DROP TABLE bench_baseline');
    await setup.end();
  }
  const result = (mode: BaselineMode): BaselineResult => {
    const a = acc.get(mode)!;
    return {
      mode,
      connections: o.connections,
      roundsPerSec: a.rates,
      medianPerSec: median(a.rates),
      bestPerSec: Math.max(...a.rates),
      rows: a.rows,
      statementsPerRow: a.statements / a.rows,
      commitsPerRow: a.commits / a.rows,
      roundsCpuUsPerRow: a.cpuUs,
      cpuUsPerRow: median(a.cpuUs),
    };
  };
  return { autocommit: result('autocommit'), transaction: result('transaction') };
}
