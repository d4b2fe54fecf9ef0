// SQL operations on applications and namespaces.
import type { RowDataPacket } from 'mysql2/promise';
import type { Conn, Tx } from './pool.js';
import { newId } from '../ids.js';

/** Locking read then insert; a concurrent creator hits the unique name and the caller's
 * transaction is retried. */
export async function findOrCreateApplication(c: Tx, name: string): Promise<string> {
  const [rows] = await c.execute<RowDataPacket[]>('SELECT id FROM applications WHERE name = ? FOR UPDATE', [name]);
  if (rows[0]) return rows[0].id as string;
  const id = newId();
  await c.execute('INSERT INTO applications (id, name, created_at, updated_at) VALUES (?, ?, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))', [id, name]);
  return id;
}

export async function findOrCreateNamespace(c: Tx, applicationId: string, name: string, environment: string): Promise<string> {
  const [rows] = await c.execute<RowDataPacket[]>('SELECT id FROM namespaces WHERE application_id = ? AND name = ? FOR UPDATE', [applicationId, name]);
  if (rows[0]) return rows[0].id as string;
  const id = newId();
  const sql = 'INSERT INTO namespaces (id, application_id, name, environment, created_at) VALUES (?, ?, ?, ?, UTC_TIMESTAMP(3))';
  await c.execute(sql, [id, applicationId, name, environment]);
  return id;
}

/** Undefined when there is no such namespace. */
export async function namespaceEnvironment(c: Conn, namespaceId: string): Promise<string | undefined> {
  const [rows] = await c.execute<RowDataPacket[]>('SELECT environment FROM namespaces WHERE id = ?', [namespaceId]);
  return rows[0]?.environment as string | undefined;
}

/** The namespace row FOR UPDATE to the commit, so per-namespace counts checked against a limit
 * serialize with each other. */
export async function lockNamespace(c: Tx, namespaceId: string): Promise<void> {
  await c.execute('SELECT id FROM namespaces WHERE id = ? FOR UPDATE', [namespaceId]);
}

/** The namespace's non-retired rows of `table`: the count its quota is checked against, under
 * lockNamespace so two creates cannot both take the last slot. */
export async function countActive(c: Conn, table: 'schedules' | 'subscriptions' | 'workflows', namespaceId: string): Promise<number> {
  const [rows] = await c.execute<RowDataPacket[]>(`SELECT COUNT(*) AS n FROM ${table} WHERE namespace_id = ? AND retired_at IS NULL`, [namespaceId]);
  return Number(rows[0]!.n);
}

export async function setApplicationQuotas(c: Conn, applicationId: string, q: { maxActiveAttempts?: number; maxUnfinishedTasks?: number }): Promise<boolean> {
  const [res] = await c.execute(
    `UPDATE applications SET max_active_attempts = COALESCE(?, max_active_attempts),
            max_unfinished_tasks = COALESCE(?, max_unfinished_tasks), updated_at = UTC_TIMESTAMP(3)
      WHERE id = ?`,
    [q.maxActiveAttempts ?? null, q.maxUnfinishedTasks ?? null, applicationId],
  );
  return (res as { affectedRows: number }).affectedRows === 1;
}

export async function insertAudit(
  c: Conn,
  a: { namespaceId: string | null; actor: string; action: string; targetType: string; targetId: string; details?: unknown },
): Promise<void> {
  await c.execute(
    `INSERT INTO audit_log (namespace_id, actor, action, target_type, target_id, details, created_at)
     VALUES (?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(3))`,
    [a.namespaceId, a.actor, a.action, a.targetType, a.targetId, a.details === undefined ? null : JSON.stringify(a.details)],
  );
}
