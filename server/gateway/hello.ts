// The hello transaction: worker identity (capability flag frozen), session row, resume of listed
// attempts, and immediate release of unlisted never-started attempts of this identity.
import type { RowDataPacket } from 'mysql2/promise';
import { OrbitError } from '@orbit/protocol/errors';
import type { HelloFrame } from '@orbit/protocol/frames';
import { ID_RE } from '@orbit/protocol/validation';
import { withTransaction, toIso, type Pool } from '../db/pool.js';
import type { Credential } from '../db/credentials.js';
import { ATTEMPT_COLUMNS, type AttemptRow } from '../dispatch/attempts-sql.js';
import { PermitLedger } from '../dispatch/ledger.js';
import { revokeAttempt } from '../dispatch/recovery.js';
import { queueConfigs } from '../db/queue-config.js';

export interface HelloResult {
  resumed: { attempt_id: string; state: 'LEASED' | 'RUNNING'; lease_expires_at: string; concurrency_token?: string; queueId: string; taskId: string }[];
  lost: string[];
  leaseMs: number;
  freedQueues: string[];
}

export async function helloTransaction(
  pool: Pool,
  cred: Credential,
  sessionId: string,
  nodeId: string,
  h: HelloFrame,
): Promise<HelloResult> {
  const queueIds = [...new Set(h.queues)];
  const keys = h.concurrency_keys ?? false;
  let ledger = new PermitLedger();
  const result = await withTransaction(pool, async (c) => {
    ledger = new PermitLedger();
    // Queues: exist in the namespace, authorized, not retired.
    const valid = queueIds.filter((q) => ID_RE.test(q));
    const [qrows] = valid.length
      ? await c.query<RowDataPacket[]>(
          `SELECT id, lease_seconds, retired_at FROM queues WHERE namespace_id = ? AND id IN (${valid.map(() => '?').join(',')})`,
          [cred.namespaceId, ...valid],
        )
      : [[] as RowDataPacket[]];
    const found = new Map(qrows.map((r) => [r.id as string, r]));
    for (const q of queueIds) {
      const row = found.get(q);
      if (!row) throw new OrbitError('NOT_FOUND', `queue ${q.slice(0, 64)} not found`);
      if (cred.queueIds !== '*' && !cred.queueIds.includes(q)) throw new OrbitError('PERMISSION_DENIED', `credential is not authorized for queue ${q}`);
      if (row.retired_at) throw new OrbitError('RESOURCE_RETIRED', `queue ${q} is retired`);
    }
    const leaseMs = Math.min(...qrows.map((r) => Number(r.lease_seconds))) * 1000;

    // Identity: the capability flag is frozen by the first hello of a worker_id.
    const [ids] = await c.execute<RowDataPacket[]>('SELECT concurrency_keys FROM worker_identities WHERE namespace_id = ? AND worker_id = ? FOR UPDATE', [
      cred.namespaceId,
      h.worker_id,
    ]);
    if (ids[0]) {
      if (Number(ids[0].concurrency_keys) !== (keys ? 1 : 0)) {
        throw new OrbitError('STATE_CONFLICT', 'concurrency_keys differs from the first hello of this worker_id; a process that upgrades must use a new worker_id');
      }
      await c.execute('UPDATE worker_identities SET current_session_id = ?, agent = ?, updated_at = UTC_TIMESTAMP(3) WHERE namespace_id = ? AND worker_id = ?', [
        sessionId,
        h.agent ?? null,
        cred.namespaceId,
        h.worker_id,
      ]);
    } else {
      await c.execute(
        `INSERT INTO worker_identities (namespace_id, worker_id, concurrency_keys, current_session_id, agent, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`,
        [cred.namespaceId, h.worker_id, keys ? 1 : 0, sessionId, h.agent ?? null],
      );
    }
    await c.execute(
      `UPDATE worker_sessions SET state = 'CLOSED', closed_at = UTC_TIMESTAMP(3), close_code = 4409
        WHERE namespace_id = ? AND worker_id = ? AND state <> 'CLOSED'`,
      [cred.namespaceId, h.worker_id],
    );
    await c.execute(
      `INSERT INTO worker_sessions (id, namespace_id, worker_id, credential_id, node_id, queue_ids, capacity, concurrency_keys, handlers, state, connected_at, last_seen_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'OPEN', UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`,
      [sessionId, cred.namespaceId, h.worker_id, cred.id, nodeId, JSON.stringify(queueIds), h.capacity, keys ? 1 : 0, h.handlers ? JSON.stringify(h.handlers) : null],
    );

    // Live attempts of this identity, locked.
    const [live] = await c.execute<AttemptRow[]>(
      `SELECT ${ATTEMPT_COLUMNS} FROM attempts WHERE namespace_id = ? AND worker_id = ? AND state IN ('LEASED','RUNNING') ORDER BY id FOR UPDATE`,
      [cred.namespaceId, h.worker_id],
    );
    const listed = new Set(h.resume ?? []);
    const resumed: HelloResult['resumed'] = [];
    const resumedIds: string[] = [];
    for (const a of live) {
      if (listed.has(a.id) && a.lease_live) {
        resumedIds.push(a.id);
      } else if (!listed.has(a.id) && a.state === 'LEASED') {
        await revokeAttempt(c, ledger, a, 'release-unlisted');
      }
      // Unlisted RUNNING attempts run out their lease (then review); listed expired ones are lost.
    }
    if (resumedIds.length) {
      const ph = resumedIds.map(() => '?').join(',');
      // Lease lengths as literals from the cached configuration (a join with queues would take a
      // shared lock on the queue row: see startAttempts).
      const byId = new Map(live.map((a) => [a.id, a.queue_id]));
      const lease = [...(await queueConfigs(c, resumedIds.map((id) => byId.get(id)!)))].map(([q, v]) => [q, v.leaseSeconds] as const);
      await c.query(
        `UPDATE attempts SET session_id = ?, lease_expires_at = UTC_TIMESTAMP(3) + INTERVAL (CASE queue_id ${lease.map(() => 'WHEN ? THEN ?').join(' ')} END) SECOND
          WHERE id IN (${ph})`,
        [sessionId, ...lease.flat(), ...resumedIds],
      );
      const [rows] = await c.query<AttemptRow[]>(`SELECT ${ATTEMPT_COLUMNS} FROM attempts WHERE id IN (${ph}) ORDER BY id`, resumedIds);
      for (const a of rows) {
        const r: HelloResult['resumed'][number] = {
          attempt_id: a.id,
          state: a.state as 'LEASED' | 'RUNNING',
          lease_expires_at: toIso(a.lease_expires_at)!,
          queueId: a.queue_id,
          taskId: a.task_id,
        };
        if (a.concurrency_token !== null) r.concurrency_token = String(a.concurrency_token);
        resumed.push(r);
      }
    }
    await ledger.flush(c);
    const resumedSet = new Set(resumedIds);
    return { resumed, lost: (h.resume ?? []).filter((id) => !resumedSet.has(id)), leaseMs, freedQueues: [] as string[] };
  });
  result.freedQueues = [...ledger.freedQueues];
  return result;
}

/** Marks a session closed (socket gone). Releases nothing: attempts run on until result or expiry. */
export async function closeSessionRow(pool: Pool, sessionId: string, code: number): Promise<void> {
  await pool.execute(`UPDATE worker_sessions SET state = 'CLOSED', closed_at = UTC_TIMESTAMP(3), close_code = ? WHERE id = ? AND state <> 'CLOSED'`, [code, sessionId]);
}
