// The statements of a claim round (server/dispatch/claim.ts), each with a named purpose. A round
// serves every session of one application on this node with one transaction:
//   permitHintsSql (no lock, with the credential check) → candidateIds (one UNION ALL over the
//   queues of waiting_tasks) → lockCandidates (SKIP LOCKED by primary key) → grantKeys (keyed
//   only) → insertAttempts → markTasksLeased (and the waiting rows deleted) → queuePermits →
//   applicationPermits.
// The hot rows (queue and application counters) are written last, as conditional updates whose
// row count decides (dispatch.md: "takes the queue and application permits with conditional
// updates"), sent with the COMMIT (db/conditional-commit.ts), so they are locked only from there
// to the commit.
import type { RowDataPacket } from 'mysql2/promise';
import type { Conn, Tx } from './pool.js';
import { readFixedShape, write } from './pipeline.js';
import { TOKEN_MAX as TOKEN_MAX_BIGINT } from '@orbit/protocol/limits';
import type { TaskRow } from './tasks.js';
import { leaveWaiting, type WaitingRow } from './waiting-tasks.js';
import { placeholders, placeholderRows } from './placeholders.js';
import { checkedAssignment, type CheckedUpdate } from './conditional-commit.js';

/** The last grantable fencing token (protocol/limits.ts) as the decimal literal the statements
 * compare highest_token with (a BIGINT UNSIGNED column). */
export const TOKEN_MAX = TOKEN_MAX_BIGINT.toString();

export interface PermitHint {
  id: string;
  namespace_id: string;
  free: number;
  lease_seconds: number;
}

/** permitHintsSql(application_id, queue ids): the queues that can grant a permit now (not paused,
 * not retired, below their limit) with their free permits, and the application's free count; sent
 * with the credential check in a claim round's first round trip (dispatch/claim.ts). A hint only
 * (a plain read, no lock): the conditional updates at the end of the round decide. */
export function permitHintsSql(applicationId: string, queueIds: string[]): [string, string[]] {
  return [
    `SELECT q.id, q.namespace_id, q.max_active_attempts - q.active_attempts AS free, q.lease_seconds,
            a.max_active_attempts - a.active_attempts AS app_free
       FROM applications a LEFT JOIN queues q
         ON q.id IN (${placeholders(queueIds.length)}) AND q.paused = 0 AND q.retired_at IS NULL AND q.active_attempts < q.max_active_attempts
      WHERE a.id = ?`,
    [...queueIds, applicationId],
  ];
}

/** The answer of permitHintsSql's statement. */
export function permitHintsOf(rows: RowDataPacket[]): { queues: PermitHint[]; appFree: number } {
  const appFree = rows[0] ? Number(rows[0].app_free) : 0;
  const queues = rows
    .filter((r) => r.id !== null)
    .map((r) => ({ id: r.id as string, namespace_id: r.namespace_id as string, free: Number(r.free), lease_seconds: Number(r.lease_seconds) }));
  return { queues, appFree };
}

/** What one queue's candidate read selects. `handlers`: null = any handler; else (handler,
 * versions) pairs. `keyed`: false = unkeyed tasks only; true = also keyed tasks whose key is free
 * and not exhausted — excluded in the WHERE clause, before LIMIT. */
export interface CandidateSpec {
  queueId: string;
  namespaceId: string;
  limit: number;
  handlers: { handler: string; versions: string[] }[] | null;
  keyed: boolean;
}

/** candidateIds(specs, now) → due, undeadlined waiting task ids of each queue in claim order, read
 * in place from the claimable rows of waiting_tasks (ix_waiting_claimable: queue, claimable,
 * priority DESC, seq — the scan stops at LIMIT), one UNION ALL statement for all queues; no locks.
 * `spec` is the index of the spec a row was read for. The busy-key filter is checked row by row,
 * so the scan walks the claimable rows of busy keys ahead of LIMIT; only each key group's first
 * row without not_before is claimable (db/waiting-tasks.ts "Waiting heads"), so that is about one
 * row per busy key and group, not the key's backlog: 1 000 waiting rows on 10 held keys read 10
 * rows instead of 1 000 (docs/benchmarks.md "Hot keys with a backlog"). The first eligible row
 * of each free key is the same as a scan of every row would find: it is either a row with
 * not_before (always claimable) or its group's first row without not_before — an earlier row of
 * the same group would be eligible too — except when that first row is past its deadline: then
 * the group's later rows are not seen until the sweeper removes it (one sweep). */
export async function candidateIds(c: Conn, specs: CandidateSpec[], now: string): Promise<{ id: string; priority: number; seq: bigint; spec: number }[]> {
  const parts: string[] = [];
  const args: unknown[] = [];
  for (const [i, s] of specs.entries()) {
    // A read of unkeyed rows only (keyed: false) needs no flag — every unkeyed row is claimable —
    // and reads the rows in place by the primary key, as before 000009 (no lookup per row).
    const [sql, values] = s.keyed ? candidateReadSql(s, now, i, 'ix_waiting_claimable', 'AND w.claimable = 1 ') : candidateReadSql(s, now, i, 'PRIMARY', '');
    parts.push(sql);
    args.push(...values);
  }
  // Prepared: it travels alone (a claim round's second round trip), where a prepared execution
  // costs the server less than parsing the text again.
  const [rows] = await readFixedShape<RowDataPacket[]>(c, parts.join(' UNION ALL '), args);
  return rows.map((r) => ({ id: r.id as string, priority: Number(r.priority), seq: BigInt(r.seq as string), spec: Number(r.spec) }));
}

/** One queue's part of the candidate read, reading index `index` with the extra condition
 * `flag` (test/waiting-heads.test.ts compares it with the scan of every row: PRIMARY, no flag).
 * FORCE INDEX: with many deadlines due soon the optimizer may prefer the deadline index, which
 * needs a sort of every waiting row of the queue; the index delivers claim order. */
export function candidateReadSql(s: CandidateSpec, now: string, i: number, index: string, flag: string): [string, unknown[]] {
  let handlerFilter = '';
  if (s.handlers) {
    handlerFilter = ' AND (' + s.handlers.map((h) => `(w.handler = ? AND w.handler_version IN (${placeholders(h.versions.length)}))`).join(' OR ') + ')';
  }
  const keyFilter = s.keyed
    ? ` AND (w.concurrency_key IS NULL OR NOT EXISTS (
          SELECT 1 FROM resource_keys r
           WHERE r.namespace_id = w.namespace_id AND r.concurrency_key = w.concurrency_key
             AND (r.holder_attempt_id IS NOT NULL OR r.highest_token >= ${TOKEN_MAX})))`
    : ' AND w.concurrency_key IS NULL';
  const sql = `(SELECT w.task_id AS id, w.priority, w.seq, ${i} AS spec FROM waiting_tasks w FORCE INDEX (${index})
      WHERE w.queue_id = ? ${flag}AND w.namespace_id = ?
        AND (w.not_before IS NULL OR w.not_before <= ?) AND w.deadline_at > ?${handlerFilter}${keyFilter}
      ORDER BY w.priority DESC, w.seq ASC LIMIT ?)`;
  const args: unknown[] = [s.queueId, s.namespaceId, now, now];
  for (const h of s.handlers ?? []) args.push(h.handler, ...h.versions);
  // The limit a parameter, not a literal: one text per shape (queues, handler lists, keyed), so
  // that the prepared form (candidateIds) is prepared once per connection, not once per limit.
  args.push(s.limit);
  return [sql, args];
}

/** The task columns a claim reads (CandidateRow). */
const CANDIDATE_COLUMNS = `t.id, t.namespace_id, t.queue_id, t.seq, t.handler, t.handler_version, t.payload_version, t.payload, t.business_key,
  t.concurrency_key, t.priority, t.deadline_at, t.attempts_created, t.workflow_run_id, t.workflow_step, t.workflow_index`;

/** Claim order of candidate rows: priority high first, then age (seq) — the order of a claim
 * round. `seq` as candidateIds reads it (bigint) or as a
 * locked row has it (a BIGINT string). */
export function byClaimOrder(a: { priority: number; seq: bigint | string }, b: { priority: number; seq: bigint | string }): number {
  if (a.priority !== b.priority) return b.priority - a.priority;
  const x = BigInt(a.seq);
  const y = BigInt(b.seq);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** The task columns a claim reads. */
export type CandidateRow = Pick<
  TaskRow,
  | 'id'
  | 'namespace_id'
  | 'queue_id'
  | 'seq'
  | 'handler'
  | 'handler_version'
  | 'payload_version'
  | 'payload'
  | 'business_key'
  | 'concurrency_key'
  | 'priority'
  | 'deadline_at'
  | 'attempts_created'
  | 'workflow_run_id'
  | 'workflow_step'
  | 'workflow_index'
>;

/** lockCandidates(ids) → the rows still WAITING, locked FOR UPDATE SKIP LOCKED by primary key
 * (rows another claimer holds are skipped, never waited for). */
export async function lockCandidates(c: Tx, ids: string[]): Promise<CandidateRow[]> {
  const [rows] = await c.query<TaskRow[]>(
    `SELECT ${CANDIDATE_COLUMNS} FROM tasks t WHERE t.id IN (${placeholders(ids.length)}) AND t.state = 'WAITING'
      FOR UPDATE SKIP LOCKED`,
    ids,
  );
  return rows;
}

/** grantKeys(namespace, [key, attempt id] in key-byte order) → the token granted to each attempt,
 * or null (held meanwhile, or exhausted at 2^64−1), and the database clock read after the grants.
 * Two statements for any number of keys, one round trip in a transaction (the first is queued):
 *   - one INSERT … ON DUPLICATE KEY UPDATE creates a key's row on first use, holder and token 1,
 *     and otherwise takes it when it is free and not exhausted (holder ← attempt, highest_token
 *     + 1, version + 1). The existing row's exclusive lock is taken at once, in key order
 *     (INSERT IGNORE's shared lock had to be upgraded by a later UPDATE, which deadlocked two
 *     claimers of the same keys). The holder is assigned first: the later assignments see the new
 *     holder, and "holder = this attempt" (a fresh id) says the grant happened;
 *   - one read returns the tokens and UTC_TIMESTAMP(3): a grant may have waited for the previous
 *     holder's release to commit, and a lease must not start before that, so the leases of the
 *     round start at this clock (it replaces a separate clock read).
 * Keys are the first rows of the round's lock order (keys, queues, application — the order of
 * every ledger flush). */
export async function grantKeys(
  c: Tx,
  namespaceId: string,
  keys: { key: Buffer; attemptId: string }[],
): Promise<{ grants: Map<string, { token: string | null; exhausted: boolean }>; now: string }> {
  const out = new Map<string, { token: string | null; exhausted: boolean }>();
  const granted = 'holder_attempt_id = VALUES(holder_attempt_id)';
  await write(
    c,
    `INSERT INTO resource_keys (namespace_id, concurrency_key, highest_token, holder_attempt_id, version, created_at, updated_at)
     VALUES ${placeholderRows(keys.length, '(?, ?, 1, ?, 1, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))')}
     ON DUPLICATE KEY UPDATE
       holder_attempt_id = IF(holder_attempt_id IS NULL AND highest_token < ${TOKEN_MAX}, VALUES(holder_attempt_id), holder_attempt_id),
       highest_token = IF(${granted}, highest_token + 1, highest_token),
       version = IF(${granted}, version + 1, version),
       updated_at = IF(${granted}, VALUES(updated_at), updated_at)`,
    keys.flatMap((k) => [namespaceId, k.key, k.attemptId]),
  );
  const [rows] = await c.query<RowDataPacket[]>(
    `SELECT concurrency_key, highest_token, holder_attempt_id, UTC_TIMESTAMP(3) AS now FROM resource_keys
      WHERE namespace_id = ? AND concurrency_key IN (${placeholders(keys.length)})`,
    [namespaceId, ...keys.map((k) => k.key)],
  );
  const byKey = new Map(rows.map((r) => [(r.concurrency_key as Buffer).toString('hex'), r]));
  for (const k of keys) {
    const r = byKey.get(k.key.toString('hex'));
    const isGranted = r && r.holder_attempt_id === k.attemptId;
    out.set(k.attemptId, {
      token: isGranted ? String(r.highest_token) : null,
      exhausted: !!r && String(r.highest_token) === TOKEN_MAX && (isGranted || r.holder_attempt_id === null),
    });
  }
  return { grants: out, now: rows[0]!.now as string };
}

export interface NewAttempt {
  id: string;
  taskId: string;
  namespaceId: string;
  applicationId: string;
  queueId: string;
  attemptNo: number;
  workerId: string;
  sessionId: string;
  concurrencyKey: Buffer | null;
  token: string | null;
  leasedAt: string;
  leaseExpiresAt: string;
}

/** insertAttempts(rows): the granted attempts, LEASED, one multi-row INSERT. */
export async function insertAttempts(c: Tx, rows: NewAttempt[]): Promise<void> {
  await write(
    c,
    `INSERT INTO attempts (id, task_id, namespace_id, application_id, queue_id, attempt_no, state, worker_id, session_id,
        concurrency_key, concurrency_token, leased_at, lease_expires_at)
     VALUES ${rows.map(() => "(?, ?, ?, ?, ?, ?, 'LEASED', ?, ?, ?, ?, ?, ?)").join(', ')}`,
    rows.flatMap((a) => [
      a.id,
      a.taskId,
      a.namespaceId,
      a.applicationId,
      a.queueId,
      a.attemptNo,
      a.workerId,
      a.sessionId,
      a.concurrencyKey,
      a.token,
      a.leasedAt,
      a.leaseExpiresAt,
    ]),
  );
}

/** markTasksLeased([task id, attempt id, its waiting row], now): the claimed tasks LEASED with their
 * current attempt, and their waiting rows deleted with the next row of each key's group flagged
 * (db/waiting-tasks.ts); the caller holds the task rows' locks and the key rows' (the grant's
 * upsert). All queued. */
export async function markTasksLeased(c: Tx, rows: { taskId: string; attemptId: string; waiting: WaitingRow }[], now: string): Promise<void> {
  await write(
    c,
    `UPDATE tasks SET state = 'LEASED', attempts_created = attempts_created + 1, updated_at = ?,
            current_attempt_id = CASE id ${rows.map(() => 'WHEN ? THEN ?').join(' ')} END
      WHERE id IN (${placeholders(rows.length)})`,
    [now, ...rows.flatMap((r) => [r.taskId, r.attemptId]), ...rows.map((r) => r.taskId)],
  );
  await leaveWaiting(
    c,
    rows.map((r) => r.waiting),
  );
}

/** queuePermits([queue id, k] by id): every queue grants its k permits (not paused, not retired,
 * within its limit) — checked per row in the SET, a queue that cannot grant refuses the statement
 * (db/conditional-commit.ts). The ids are the queues of candidates read in this round. */
export function queuePermits(perQueue: [string, number][]): CheckedUpdate {
  const sorted = [...perQueue].sort((a, b) => (a[0] < b[0] ? -1 : 1));
  const k = `CASE id ${sorted.map(() => 'WHEN ? THEN ?').join(' ')} END`;
  const kArgs = sorted.flat();
  return {
    sql: `UPDATE queues SET ${checkedAssignment('queues', 'active_attempts', queueDispatches(k), `active_attempts + ${k}`)}
      WHERE id IN (${placeholders(sorted.length)})`,
    values: [...kArgs, ...kArgs, ...sorted.map(([id]) => id)],
  };
}

/** queueDispatches(delta): the SQL condition that a queue row grants `delta` more permits now —
 * not paused, not retired, within max_active_attempts. */
function queueDispatches(delta: string): string {
  return `paused = 0 AND retired_at IS NULL AND active_attempts + ${delta} <= max_active_attempts`;
}

/** applicationPermits(application id, k): the application's active-attempt limit allows k more,
 * checked in the SET (db/conditional-commit.ts). */
export function applicationPermits(applicationId: string, k: number): CheckedUpdate {
  return {
    sql: `UPDATE applications SET ${checkedAssignment('applications', 'active_attempts', 'active_attempts + ? <= max_active_attempts', 'active_attempts + ?')} WHERE id = ?`,
    values: [k, k, applicationId],
  };
}
