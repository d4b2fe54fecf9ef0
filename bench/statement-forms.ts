// What one execution of a hot fixed-shape statement costs in each of the three forms a gateway can
// send it in (docs/benchmarks.md "Where mariadbd's CPU goes"):
//   text      conn.query(sql, values): client-side formatting, one text protocol round trip;
//   prepared  conn.execute(sql, values): binary protocol, the statement prepared once per
//             connection (mysql2 caches it by text), one round trip per execution;
//   multi5    five executions formatted into one multi-statement text (db/pipeline.ts's way).
// mariadbd's CPU from /proc/<pid>/stat (utime + stime over the server's threads), the client's
// (this process: mysql2's formatting or binary encoding, and its parsing of the answers) from
// process.cpuUsage(); both per execution. A private server in a temporary folder, one connection,
// forms and statements alternated round by round. Usage (after npm run build):
//   node dist/bench/statement-forms.js [--n=2000] [--rounds=4]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { RowDataPacket } from 'mysql2/promise';
import { startEmbeddedMariaDb, ensureDatabase } from '../server/mariadb/embedded-mariadb.js';
import { createPool, type PooledConn } from '../server/db/pool.js';
import { migrateUp } from '../server/mariadb/migrations.js';
import { liveCredentialsWithClockSql } from '../server/db/credentials.js';
import { candidateReadSql } from '../server/db/claim-sql.js';
import { closeAttemptsSql } from '../server/db/attempt-batches.js';
import { parseStat } from './cpu.js';

const opt = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const N = Number(opt('n') ?? 2000);
const ROUNDS = Number(opt('rounds') ?? 4);
/** Executions per transaction (START TRANSACTION … COMMIT around them, the same in every form). */
const PER_TX = 50;

const hex = (n: number, tag: string) => (tag + n.toString(16)).padStart(32, '0');
const NS = hex(1, 'a');
const APP = hex(1, 'b');
const QUEUE = hex(1, 'c');
const CRED = hex(1, 'd');
const NOW = '2026-12-03 12:00:00.000';
const ROWS = 200;

type Statement = { name: string; make: (i: number) => [string, unknown[]] };

/** Orbit's hottest fixed-shape statements, built by the functions that send them. */
function statements(): Statement[] {
  let attemptNo = 0;
  return [
    { name: 'credential check with the clock (scalar form)', make: () => liveCredentialsWithClockSql([CRED]) },
    { name: 'credential check with the clock (join form, 2 ids)', make: () => liveCredentialsWithClockSql([CRED, hex(2, 'd')]) },
    {
      name: 'claim candidate read (one queue, unkeyed, LIMIT 10)',
      make: () => candidateReadSql({ queueId: QUEUE, namespaceId: NS, limit: 10, handlers: null, keyed: false }, NOW, 0, 'PRIMARY', ''),
    },
    {
      name: 'closeAttempts, one row',
      make: (i) =>
        closeAttemptsSql(
          [
            {
              id: hex(i % ROWS, 'e'),
              state: 'SUCCEEDED',
              outcome: 'succeeded',
              started: true,
              output: `{"n":${i}}`,
              errorCode: null,
              errorMessage: null,
              fingerprint: 'f'.repeat(64),
              reply: `{"ok":${i}}`,
            },
          ],
          NOW,
        ),
    },
    {
      name: 'updateTasksAfterResults, one row',
      make: (i) => [
        `UPDATE tasks SET state = ?, attempts_made = ?, finished_at = ?, result_outcome = ?, result_output = ?, result_error_code = ?, result_error_message = ?, current_attempt_id = NULL, updated_at = ? WHERE id = ?`,
        ['SUCCEEDED', i % 7, NOW, 'succeeded', `{"n":${i}}`, null, null, NOW, hex(i % ROWS, 'f')],
      ],
    },
    {
      name: 'INSERT INTO attempts, one row',
      make: () => {
        attemptNo++;
        return [
          `INSERT INTO attempts (id, task_id, namespace_id, application_id, queue_id, attempt_no, state, worker_id, session_id,
        concurrency_key, concurrency_token, leased_at, lease_expires_at)
     VALUES (?, ?, ?, ?, ?, ?, 'LEASED', ?, ?, ?, ?, ?, ?)`,
          [hex(attemptNo, '7'), hex(1, '8'), NS, APP, QUEUE, attemptNo, 'worker-1', hex(1, '9'), null, null, NOW, NOW],
        ];
      },
    },
  ];
}

async function fixture(conn: PooledConn): Promise<void> {
  await conn.query(`INSERT INTO credentials (id, namespace_id, name, token_hash, scopes, created_at) VALUES ?`, [
    [1, 2].map((n) => [hex(n, 'd'), NS, `c${n}`, Buffer.alloc(32, n), 'worker', NOW]),
  ]);
  const tasks = Array.from({ length: ROWS }, (_, i) => [hex(i, 'f'), NS, APP, QUEUE, 'h', 'v1', 'v1', '{}', 'WAITING', 3, '2027-01-01', NOW, NOW]);
  await conn.query(
    `INSERT INTO tasks (id, namespace_id, application_id, queue_id, handler, handler_version, payload_version, payload, state, max_attempts, deadline_at, created_at, updated_at) VALUES ?`,
    [tasks],
  );
  await conn.query(
    `INSERT INTO waiting_tasks (queue_id, priority, seq, task_id, namespace_id, application_id, handler, handler_version, deadline_at, created_at)
       SELECT queue_id, priority, seq, id, namespace_id, application_id, handler, handler_version, deadline_at, created_at FROM tasks`,
  );
  const attempts = Array.from({ length: ROWS }, (_, i) => [hex(i, 'e'), hex(i, 'f'), NS, APP, QUEUE, 1, 'RUNNING', 'worker-1', hex(1, '9'), NOW, NOW]);
  await conn.query(
    `INSERT INTO attempts (id, task_id, namespace_id, application_id, queue_id, attempt_no, state, worker_id, session_id, leased_at, lease_expires_at) VALUES ?`,
    [attempts],
  );
}

type Form = 'text' | 'prepared' | 'multi5';
const FORMS: Form[] = ['text', 'prepared', 'multi5'];

/** N executions of `s` in `form`, in transactions of PER_TX; returns the count run. */
async function run(conn: PooledConn, s: Statement, form: Form, start: number): Promise<void> {
  for (let i = 0; i < N; i += 5) {
    if (i % PER_TX === 0) await conn.query(i === 0 ? 'START TRANSACTION' : 'COMMIT; START TRANSACTION');
    if (form === 'multi5') {
      const texts = [0, 1, 2, 3, 4].map((k) => conn.format(...s.make(start + i + k)));
      await conn.query(texts.join(';\n'));
    } else {
      for (let k = 0; k < 5; k++) {
        const [sql, values] = s.make(start + i + k);
        if (form === 'text') await conn.query(sql, values);
        else await conn.execute(sql, values as never);
      }
    }
  }
  await conn.query('COMMIT');
}

const serverMs = (pid: number) => parseStat(fs.readFileSync(`/proc/${pid}/stat`, 'utf8')).selfMs;

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'orbit-forms-'));
  const db = await startEmbeddedMariaDb({ dataDir: dir, serverArgs: ['--innodb-flush-log-at-trx-commit=1'], log: () => {} });
  const pid = db.child.pid!;
  await ensureDatabase(db, 'orbit');
  const pool = createPool(db.dsn('orbit'), { connectionLimit: 2 });
  try {
    await migrateUp(pool);
    const conn = await pool.getConnection();
    await fixture(conn);
    const list = statements();
    // Idle CPU of the server (its background threads), subtracted per wall-clock ms.
    const idle0 = serverMs(pid);
    await new Promise((r) => setTimeout(r, 3000));
    const idlePerMs = (serverMs(pid) - idle0) / 3000;
    const acc = new Map<string, { server: number[]; client: number[] }>();
    let start = 0;
    for (let round = 0; round < ROUNDS; round++) {
      for (const s of list) {
        // Alternated: each round starts with a different form.
        const order = FORMS.map((_, k) => FORMS[(k + round) % FORMS.length]!);
        for (const form of order) {
          await run(conn, s, form, start); // warm-up (prepares, buffer pool) — not counted
          start += N;
          const [s0, c0, t0] = [serverMs(pid), process.cpuUsage(), performance.now()];
          await run(conn, s, form, start);
          start += N;
          const wall = performance.now() - t0;
          const c = process.cpuUsage(c0);
          const key = `${s.name}|${form}`;
          const a = acc.get(key) ?? { server: [], client: [] };
          a.server.push(((serverMs(pid) - s0 - idlePerMs * wall) * 1000) / N);
          a.client.push((c.user + c.system) / N);
          acc.set(key, a);
          console.error(`round ${round + 1} ${key}: ${a.server.at(-1)!.toFixed(0)} / ${a.client.at(-1)!.toFixed(0)} µs (${(wall / N).toFixed(2)} ms wall)`);
        }
      }
    }
    const [st] = await conn.query<RowDataPacket[]>(`SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_stmt_prepare', 'Com_stmt_execute', 'Prepared_stmt_count')`);
    conn.release();
    const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const f = (xs: number[]) => `${med(xs).toFixed(0)} (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`;
    console.log(
      `${N} executions per form per round, ${ROUNDS} rounds, transactions of ${PER_TX}; idle server ${(idlePerMs * 1000).toFixed(1)} µs/s; load ${os
        .loadavg()
        .map((x) => x.toFixed(1))
        .join(' ')}`,
    );
    console.log('| statement | form | mariadbd µs / execution, median (min–max) | client (node) µs / execution |');
    console.log('| --- | --- | --- | --- |');
    for (const [key, a] of acc) {
      const [name, form] = key.split('|');
      console.log(`| ${name} | ${form} | ${f(a.server)} | ${f(a.client)} |`);
    }
    console.log(st.map((r) => `${r.Variable_name}=${r.Value}`).join(' '));
  } finally {
    await pool.end();
    await db.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
