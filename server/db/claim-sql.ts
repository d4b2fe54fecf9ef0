// The statements of a claim round. The hot counter rows are written last, with the COMMIT, so
// their locks are held only from there to the commit.
import type { RowDataPacket } from 'mysql2/promise';
import type { Conn, Tx } from './pool.js';
import { readFixedShape, write } from './pipeline.js';
import { TOKEN_MAX as TOKEN_MAX_BIGINT } from '@orbit/protocol/limits';
import type { TaskFields, TaskRow } from './tasks.js';
import type { AttemptFields } from './attempts.js';
import { leaveWaiting, type WaitingRow } from './waiting-tasks.js';
import { caseWhen, placeholderRows, placeholders } from './placeholders.js';
import { checkedAssignment, type CheckedUpdate } from './conditional-commit.js';

export const TOKEN_MAX = TOKEN_MAX_BIGINT.toString();

export interface PermitHint {
  id: string;
  namespace_id: string;
  free: number;
  lease_seconds: number;
}

/** Queues that can grant a permit now and the application's free count: a hint without a lock;
 * the conditional updates decide. */
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

export function permitHintsOf(rows: RowDataPacket[]): { queues: PermitHint[]; appFree: number } {
  const appFree = rows[0] ? Number(rows[0].app_free) : 0;
  const queues = rows
    .filter((r) => r.id !== null)
    .map((r) => ({ id: r.id as string, namespace_id: r.namespace_id as string, free: Number(r.free), lease_seconds: Number(r.lease_seconds) }));
  return { queues, appFree };
}

/** `handlers`: null = any. `keyed`: also read keyed tasks whose key is free. */
export interface CandidateSpec {
  queueId: string;
  namespaceId: string;
  limit: number;
  handlers: { handler: string; versions: string[] }[] | null;
  keyed: boolean;
}

/** Waiting task ids of each queue in claim order, one UNION ALL, no locks. Only key groups' heads
 * are claimable, so the busy-key filter walks one row per busy key, not its backlog. */
export async function candidateIds(c: Conn, specs: CandidateSpec[], now: string): Promise<{ id: string; priority: number; seq: bigint; spec: number }[]> {
  const parts: string[] = [];
  const args: unknown[] = [];
  for (const [i, s] of specs.entries()) {
    // Unkeyed rows are all claimable: read them by the primary key.
    const [sql, values] = s.keyed ? candidateReadSql(s, now, i, 'ix_waiting_claimable', 'AND w.claimable = 1 ') : candidateReadSql(s, now, i, 'PRIMARY', '');
    parts.push(sql);
    args.push(...values);
  }
  // Prepared: it travels alone, where a prepared execution costs the server less than a parse.
  const [rows] = await readFixedShape<RowDataPacket[]>(c, parts.join(' UNION ALL '), args);
  return rows.map((r) => ({ id: r.id as string, priority: Number(r.priority), seq: BigInt(r.seq as string), spec: Number(r.spec) }));
}

/** FORCE INDEX: the optimizer may prefer the deadline index, which needs a sort. */
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
  args.push(s.limit);
  return [sql, args];
}

// prettier-ignore
const CANDIDATE = [
  'id', 'namespace_id', 'queue_id', 'seq', 'handler', 'handler_version', 'payload_version', 'payload', 'business_key', 'concurrency_key', 'priority',
  'deadline_at', 'attempts_created', 'workflow_run_id', 'workflow_step', 'workflow_index',
] as const satisfies readonly (keyof TaskFields)[];
const CANDIDATE_COLUMNS = CANDIDATE.map((c) => `t.${c}`).join(', ');

export function byClaimOrder(a: { priority: number; seq: bigint | string }, b: { priority: number; seq: bigint | string }): number {
  if (a.priority !== b.priority) return b.priority - a.priority;
  const x = BigInt(a.seq);
  const y = BigInt(b.seq);
  return x < y ? -1 : x > y ? 1 : 0;
}

export type CandidateRow = Pick<TaskFields, (typeof CANDIDATE)[number]>;

/** SKIP LOCKED: rows another claimer holds are skipped, never waited for. */
export async function lockCandidates(c: Tx, ids: string[]): Promise<CandidateRow[]> {
  const [rows] = await c.query<TaskRow[]>(
    `SELECT ${CANDIDATE_COLUMNS} FROM tasks t WHERE t.id IN (${placeholders(ids.length)}) AND t.state = 'WAITING'
      FOR UPDATE SKIP LOCKED`,
    ids,
  );
  return rows;
}

/** The token granted to each attempt (null: held or exhausted) and the clock read after the
 * grants. Keys in key-byte order; the upsert takes each row's X lock at once (a shared lock
 * upgraded later deadlocks two claimers). The clock comes after because a grant may have waited
 * for the previous holder's release, and no lease may start before that. */
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

/** The columns an attempt's INSERT takes from its row; its state is LEASED. */
// prettier-ignore
const ATTEMPT_INSERTED = [
  'id', 'task_id', 'namespace_id', 'application_id', 'queue_id', 'attempt_no', 'worker_id', 'session_id', 'concurrency_key', 'concurrency_token',
  'leased_at', 'lease_expires_at',
] as const satisfies readonly (keyof AttemptFields)[];
export type NewAttempt = Pick<AttemptFields, (typeof ATTEMPT_INSERTED)[number]>;

export async function insertAttempts(c: Tx, rows: NewAttempt[]): Promise<void> {
  await write(
    c,
    `INSERT INTO attempts (${ATTEMPT_INSERTED.join(', ')}, state)
     VALUES ${placeholderRows(rows.length, `(${placeholders(ATTEMPT_INSERTED.length)}, 'LEASED')`)}`,
    rows.flatMap((a) => ATTEMPT_INSERTED.map((n) => a[n])),
  );
}

/** The caller holds the task and key row locks. */
export async function markTasksLeased(c: Tx, rows: { taskId: string; attemptId: string; waiting: WaitingRow }[], now: string): Promise<void> {
  await write(
    c,
    `UPDATE tasks SET state = 'LEASED', attempts_created = attempts_created + 1, updated_at = ?,
            current_attempt_id = ${caseWhen('id', rows.length)}
      WHERE id IN (${placeholders(rows.length)})`,
    [now, ...rows.flatMap((r) => [r.taskId, r.attemptId]), ...rows.map((r) => r.taskId)],
  );
  const waiting = rows.map((r) => r.waiting);
  await leaveWaiting(c, waiting);
}

/** Checked per row: a queue that cannot grant its k refuses the statement. */
export function queuePermits(perQueue: [string, number][]): CheckedUpdate {
  const sorted = [...perQueue].sort((a, b) => (a[0] < b[0] ? -1 : 1));
  const k = caseWhen('id', sorted.length);
  const kArgs = sorted.flat();
  const dispatches = `paused = 0 AND retired_at IS NULL AND active_attempts + ${k} <= max_active_attempts`;
  return {
    sql: `UPDATE queues SET ${checkedAssignment('queues', 'active_attempts', dispatches, `active_attempts + ${k}`)}
      WHERE id IN (${placeholders(sorted.length)})`,
    values: [...kArgs, ...kArgs, ...sorted.map(([id]) => id)],
  };
}

export function applicationPermits(applicationId: string, k: number): CheckedUpdate {
  return {
    sql: `UPDATE applications SET ${checkedAssignment('applications', 'active_attempts', 'active_attempts + ? <= max_active_attempts', 'active_attempts + ?')} WHERE id = ?`,
    values: [k, k, applicationId],
  };
}
