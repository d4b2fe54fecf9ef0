// SQL operations on credentials.
import type { RowDataPacket } from 'mysql2/promise';
import type { Pool, Conn, Tx } from './pool.js';
import { placeholders } from './placeholders.js';

export interface Credential {
  id: string;
  namespaceId: string;
  applicationId: string;
  name: string;
  scopes: string[];
  queueIds: '*' | string[];
  revokedAt: string | null;
}

/** `hash`: SHA-256 of the bearer token. */
export async function findCredentialByTokenHash(pool: Pool, hash: Buffer): Promise<Credential | null> {
  const [rows] = await pool.execute<RowDataPacket[]>(
    `SELECT c.id, c.namespace_id AS namespaceId, n.application_id AS applicationId, c.name, c.scopes, c.queue_ids AS queueIds, c.revoked_at AS revokedAt
       FROM credentials c JOIN namespaces n ON n.id = c.namespace_id
      WHERE c.token_hash = ?`,
    [hash],
  );
  const r = rows[0] as (Omit<Credential, 'scopes' | 'queueIds'> & { scopes: string; queueIds: string | null }) | undefined;
  return r ? { ...r, scopes: r.scopes.split(' ').filter(Boolean), queueIds: r.queueIds === null ? '*' : (JSON.parse(r.queueIds) as string[]) } : null;
}

export async function insertCredential(
  db: Pool | Conn,
  c: { id: string; namespaceId: string; name: string; tokenHash: Buffer; scopes: string[]; queueIds: '*' | string[] },
): Promise<void> {
  await db.execute(
    `INSERT INTO credentials (id, namespace_id, name, token_hash, scopes, queue_ids, created_at)
     VALUES (?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(3))`,
    [c.id, c.namespaceId, c.name, c.tokenHash, c.scopes.join(' '), c.queueIds === '*' ? null : JSON.stringify(c.queueIds)],
  );
}

export async function revokeCredential(db: Pool | Conn, id: string): Promise<boolean> {
  const [res] = await db.execute(`UPDATE credentials SET revoked_at = UTC_TIMESTAMP(3) WHERE id = ? AND revoked_at IS NULL`, [id]);
  return (res as { affectedRows: number }).affectedRows === 1;
}

export async function revokedCredentialIds(pool: Pool, ids: string[]): Promise<string[]> {
  const [revoked] = await pool.query<RowDataPacket[]>(`SELECT id FROM credentials WHERE revoked_at IS NOT NULL AND id IN (${placeholders(ids.length)})`, ids);
  return revoked.map((r) => r.id as string);
}

export async function credentialNamespace(c: Conn, id: string): Promise<string | null> {
  const [rows] = await c.execute<RowDataPacket[]>('SELECT namespace_id FROM credentials WHERE id = ?', [id]);
  return rows[0] ? (rows[0].namespace_id as string) : null;
}

/** Share-locks the live credential's row to the commit, so revocation serializes with every
 * command that checked it. */
export async function lockLiveCredential(c: Tx, id: string): Promise<boolean> {
  // Text, not prepared: it can travel with the queued START TRANSACTION.
  const [rows] = await c.query<RowDataPacket[]>('SELECT 1 FROM credentials WHERE id = ? AND revoked_at IS NULL LOCK IN SHARE MODE', [id]);
  return rows.length === 1;
}

/** Also leaves the clock in @orbit_now for later statements of the transaction. */
export function liveCredentialsWithClockSql(ids: string[]): [string, string[]] {
  // One credential: a scalar subquery, no derived table; its own locking clause keeps the lock.
  if (ids.length === 1) {
    return [
      `SELECT @orbit_now := UTC_TIMESTAMP(3) AS now,
              (SELECT c.id FROM credentials c WHERE c.id = ? AND c.revoked_at IS NULL LOCK IN SHARE MODE) AS id`,
      ids,
    ];
  }
  return [
    `SELECT c.id, t.now FROM (SELECT @orbit_now := UTC_TIMESTAMP(3) AS now) t
       LEFT JOIN credentials c ON c.id IN (${placeholders(ids.length)}) AND c.revoked_at IS NULL
       LOCK IN SHARE MODE`,
    ids,
  ];
}

export function liveCredentialsWithClockOf(rows: RowDataPacket[]): { live: Set<string>; now: string } {
  return { live: new Set(rows.filter((r) => r.id !== null).map((r) => r.id as string)), now: rows[0]!.now as string };
}
