// Permit accounting invariants of docs/guarantees.md, checked in SQL on one consistent snapshot (so a
// claim or release committing meanwhile never shows a torn picture):
// - queues.active_attempts = live (LEASED/RUNNING) attempts of the queue;
// - applications.active_attempts = live attempts of the application;
// - resource_keys.holder_attempt_id is set exactly for live keyed attempts (the holder is a live
//   attempt of that namespace and key, and every live keyed attempt holds its key);
// - applications.unfinished_tasks = tasks in WAITING/LEASED/RUNNING/NEEDS_REVIEW;
// - at most one live attempt per task and per (namespace, key);
// - a waiting_tasks row exactly for each WAITING task (migration 000007).
import { expect } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import type { Pool } from '../../server/db/pool.js';

type Rows = RowDataPacket[];

export async function assertPermitInvariants(pool: Pool): Promise<void> {
  const c = await pool.getConnection();
  try {
    await c.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ');
    await c.query('START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY');
    const q = async (sql: string) => (await c.query<Rows>(sql))[0];

    const queues = await q(`
      SELECT q.id, q.active_attempts AS counter,
             (SELECT COUNT(*) FROM attempts a WHERE a.queue_id = q.id AND a.state IN ('LEASED','RUNNING')) AS live
        FROM queues q ORDER BY q.id`);
    expect(
      queues.filter((r) => Number(r.counter) !== Number(r.live)).map((r) => ({ queue: r.id, active_attempts: Number(r.counter), live: Number(r.live) })),
      'queues.active_attempts = live attempts of the queue',
    ).toEqual([]);

    const apps = await q(`
      SELECT p.id, p.active_attempts AS counter, p.unfinished_tasks AS unfinished,
             (SELECT COUNT(*) FROM attempts a WHERE a.application_id = p.id AND a.state IN ('LEASED','RUNNING')) AS live,
             (SELECT COUNT(*) FROM tasks t WHERE t.application_id = p.id AND t.state IN ('WAITING','LEASED','RUNNING','NEEDS_REVIEW')) AS open_tasks
        FROM applications p ORDER BY p.id`);
    expect(
      apps.filter((r) => Number(r.counter) !== Number(r.live)).map((r) => ({ application: r.id, active_attempts: Number(r.counter), live: Number(r.live) })),
      'applications.active_attempts = live attempts of the application',
    ).toEqual([]);
    expect(
      apps
        .filter((r) => Number(r.unfinished) !== Number(r.open_tasks))
        .map((r) => ({ application: r.id, unfinished_tasks: Number(r.unfinished), counted: Number(r.open_tasks) })),
      'applications.unfinished_tasks = tasks in WAITING/LEASED/RUNNING/NEEDS_REVIEW',
    ).toEqual([]);

    // A holder must be a live attempt of that very namespace and key.
    const badHolders = await q(`
      SELECT HEX(r.concurrency_key) AS k, r.holder_attempt_id AS holder, a.state, a.namespace_id = r.namespace_id AS same_ns,
             a.concurrency_key = r.concurrency_key AS same_key
        FROM resource_keys r LEFT JOIN attempts a ON a.id = r.holder_attempt_id
       WHERE r.holder_attempt_id IS NOT NULL
         AND (a.id IS NULL OR a.state NOT IN ('LEASED','RUNNING') OR a.namespace_id <> r.namespace_id OR a.concurrency_key <> r.concurrency_key)`);
    expect(
      badHolders.map((r) => ({ key: r.k, holder: r.holder, state: r.state ?? null })),
      'resource key held only by a live attempt of that key',
    ).toEqual([]);

    // Every live keyed attempt holds its key.
    const unheld = await q(`
      SELECT a.id, a.state, HEX(a.concurrency_key) AS k, r.holder_attempt_id AS holder
        FROM attempts a LEFT JOIN resource_keys r ON r.namespace_id = a.namespace_id AND r.concurrency_key = a.concurrency_key
       WHERE a.state IN ('LEASED','RUNNING') AND a.concurrency_key IS NOT NULL AND (r.holder_attempt_id IS NULL OR r.holder_attempt_id <> a.id)`);
    expect(
      unheld.map((r) => ({ attempt: r.id, state: r.state, key: r.k, holder: r.holder ?? null })),
      'live keyed attempts hold their key',
    ).toEqual([]);

    const twoLivePerKey = await q(`
      SELECT namespace_id, HEX(concurrency_key) AS k, COUNT(*) AS n FROM attempts
       WHERE state IN ('LEASED','RUNNING') AND concurrency_key IS NOT NULL GROUP BY namespace_id, concurrency_key HAVING COUNT(*) > 1`);
    expect(twoLivePerKey, 'mutual exclusion per (namespace, key)').toEqual([]);

    const twoLivePerTask = await q(`
      SELECT task_id, COUNT(*) AS n FROM attempts WHERE state IN ('LEASED','RUNNING') GROUP BY task_id HAVING COUNT(*) > 1`);
    expect(twoLivePerTask, 'at most one live attempt per task').toEqual([]);

    // The task's state agrees with its live attempt.
    const mismatched = await q(`
      SELECT t.id, t.state, a.state AS attempt_state FROM tasks t LEFT JOIN attempts a ON a.id = t.current_attempt_id
       WHERE (t.state IN ('LEASED','RUNNING') AND (a.id IS NULL OR a.state <> t.state))
          OR (t.state NOT IN ('LEASED','RUNNING') AND t.current_attempt_id IS NOT NULL)`);
    expect(mismatched, 'task LEASED/RUNNING exactly with a current attempt in the same state').toEqual([]);

    // The claimable copy (migration 000007): a waiting row exactly for each WAITING task, with its
    // queue, priority, seq, key and deadline.
    const waitingMismatch = await q(`
      SELECT t.id, t.state, w.task_id AS waiting FROM tasks t
        LEFT JOIN waiting_tasks w ON (w.queue_id, w.priority, w.seq) = (t.queue_id, t.priority, t.seq)
       WHERE (t.state = 'WAITING') <> (w.task_id IS NOT NULL)
          OR (w.task_id IS NOT NULL AND (w.task_id <> t.id OR w.deadline_at <> t.deadline_at OR NOT (w.concurrency_key <=> t.concurrency_key)
              OR w.application_id <> t.application_id OR w.namespace_id <> t.namespace_id))
      UNION ALL
      SELECT w.task_id, NULL, w.task_id FROM waiting_tasks w LEFT JOIN tasks t ON t.id = w.task_id WHERE t.id IS NULL`);
    expect(waitingMismatch, 'a waiting_tasks row exactly for each WAITING task').toEqual([]);
    await c.query('COMMIT');
  } finally {
    // A failed expectation leaves the read-only transaction open: end it before the connection
    // goes back to the pool (the next user's SET TRANSACTION would fail).
    await c.query('ROLLBACK').catch(() => {});
    c.release();
  }
}
